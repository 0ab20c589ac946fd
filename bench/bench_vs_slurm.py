"""vipu-sim and a real Slurm side by side: one run, this machine, the same workload, one table with their ratio.

Run (as root; installs Debian's slurm-wlm and munge on first use, < 15 min in all):
    .venv/bin/python bench/bench_vs_slurm.py [--phases abcde] [--skip-slurm]

Slurm is measured by ../shared/peer/slurm_peer.sh (its own folder, 127.0.0.1 only, stops what it starts); vipu-sim
by the same phases against a fresh vipu-server (--ray off: trivial jobs need no machine actors):
  a  submissions per second, 1 and 4 concurrent clients, with and without --hold. Slurm's clients are `sbatch`
     processes; vipu-sim's are gRPC clients (processes) submitting one job per call, as a workflow engine would,
     plus one row for the `vipu submit` CLI (a Python process per job) so nobody mistakes one for the other, and
     the same rows with compiled clients (bench/submit_client.cc, C++, built here against Debian's gRPC), since
     sbatch is C too; and ceiling rows: the same clients making empty calls to bench/bare_server.py, a gRPC server
     with nothing of vipu-sim in it, whose ratio to sbatch is the most any Python gRPC server could show here;
     and rows "100 per call": the same Python clients queueing 100 jobs per SubmitJobs call (each job its own spec
     and request id, all committed before the answer), and `vipu submit` given 100 spec files.
  b  submit-to-running and submit-to-completed latency p50/p99 on an idle cluster, one job at a time with a random
     0-0.5 s gap (vipu-sim: the job record's start and end times minus the client's submit time, same host clock).
  c  1,000 trivial jobs end to end (submitted by one client, until the queue is empty), and as one array.
  d  a queue of 10,000 held jobs: `vipu queue` and `vipu queue --json` (CLI processes, like squeue), then cancel all.
  e  kill -9 of the controller right after 500 submissions are acknowledged: how many survive, time to serve again.
All figures are wall-clock on this machine. Slurm rows quote the peer's medians (its own repetitions).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from live_server import start_bare_server, start_server

from vipu.client.paging import every_page
from vipu.v1 import job_pb2 as j, job_pb2_grpc
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer" / "slurm_peer.sh"
BIN = Path(sys.executable).parent
PER_CALL = 100  # rows "100 per call": SubmitJobs, one call queueing 100 jobs (each its own spec and request id)
TRIVIAL = {"name": "trivial", "ipus": 1, "time_limit": "1m", "user": "bench", "workload": {"kind": "sleep", "duration": 0}}


def spec(hold: bool = False) -> bytes:
    return json.dumps({**TRIVIAL, "hold": hold}).encode()


def submitter(port: int, count: int, hold: bool | None, out, per_call: int = 1) -> None:
    """`count` submissions, one job per call (SubmitJob), or `per_call` jobs per call (SubmitJobs, each with its own
    request id); hold=None makes the calls empty ones (GetVersion) instead."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        empty = partition_pb2_grpc.PartitionServiceStub(channel).GetVersion
        stub.GetJob  # noqa: B018 - channel is lazy; the first call connects
        ids = []
        for i in range(0, count, per_call):
            if hold is None:
                empty(p.GetVersionRequest(), timeout=30)
                ids.append(i)
                continue
            requests = [j.SubmitJobRequest(spec=spec(hold), request_id=uuid.uuid4().hex)
                        for _ in range(min(per_call, count - i))]
            if per_call == 1:
                ids.extend(stub.SubmitJob(requests[0], timeout=30).job_ids)
            else:
                ids.extend(x for reply in stub.SubmitJobs(j.SubmitJobsRequest(jobs=requests), timeout=30).jobs
                           for x in reply.job_ids)
        out.extend(ids)


def submit_parallel(port: int, total: int, clients: int, hold: bool | None,
                    per_call: int = 1) -> tuple[float, list[int]]:
    with multiprocessing.Manager() as manager:
        out = manager.list()
        procs = [multiprocessing.Process(target=submitter, args=(port, total // clients, hold, out, per_call))
                 for _ in range(clients)]
        start = time.perf_counter()
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        elapsed = time.perf_counter() - start
        return len(out) / elapsed, list(out)


def compiled_parallel(client: Path, port: int, total: int, clients: int, hold: bool | None) -> float:
    """submit_parallel's rate with bench/submit_client.cc's processes as the clients."""
    mode, text = ("empty", "") if hold is None else ("submit", spec(hold).decode())
    start = time.perf_counter()
    procs = [subprocess.Popen([str(client), f"127.0.0.1:{port}", str(total // clients), mode, text],
                              stdout=subprocess.PIPE, text=True) for _ in range(clients)]
    answered = sum(int(proc.communicate()[0]) for proc in procs)
    if any(proc.returncode for proc in procs):
        raise RuntimeError("a compiled client failed (its error is above)")
    return answered / (time.perf_counter() - start)


CLIENT_PACKAGES = ("libgrpc++-dev", "protobuf-compiler-grpc", "protobuf-compiler", "libprotobuf-dev", "pkg-config")


def build_compiled_client(folder: Path) -> Path | None:
    """bench/submit_client.cc built against Debian's gRPC C++, installed with apt as the peer installs Slurm; None,
    with a line saying why, when it cannot be (its rows then print -)."""
    if shutil.which("grpc_cpp_plugin") is None:
        if os.geteuid() != 0:
            print(f"# no compiled-client rows: run as root, or apt-get install {' '.join(CLIENT_PACKAGES)}")
            return None
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *CLIENT_PACKAGES]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(install, env=env, capture_output=True, timeout=600).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=300)
            subprocess.run(install, env=env, capture_output=True, timeout=600, check=True)
    protos = sorted(str(x) for x in (ROOT / "protos" / "vipu" / "v1").glob("*.proto"))
    subprocess.run(["protoc", f"-I{ROOT / 'protos'}", f"--cpp_out={folder}", f"--grpc_out={folder}",
                    f"--plugin=protoc-gen-grpc={shutil.which('grpc_cpp_plugin')}", *protos], check=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc++", "protobuf"], check=True,
                           capture_output=True, text=True).stdout.split()
    sources = [str(ROOT / "bench" / "submit_client.cc")] + [
        str(folder / "vipu" / "v1" / f"{name}{kind}.pb.cc") for name in ("job", "partition") for kind in ("", ".grpc")]
    binary = folder / "submit_client"
    subprocess.run(["g++", "-O2", "-std=c++17", f"-I{folder}", *sources, *flags, "-o", str(binary)], check=True)
    return binary


def transport_ceiling(knobs: dict, compiled: Path | None) -> dict[str, float]:
    """Rows a's harness, but empty calls to a server with nothing of ours in it (bench/bare_server.py): no
    submission can be faster than this, so its ratio to Slurm is the most any Python gRPC server could show."""
    proc, port = start_bare_server()
    try:
        r = {}
        for clients in (1, knobs["CLIENTS"]):
            r[f"a_{clients}c_ceiling"] = submit_parallel(port, knobs["N_SUB"], clients, None)[0]
            if compiled:
                r[f"a_{clients}c_ceiling_cxx"] = compiled_parallel(compiled, port, knobs["N_SUB"], clients, None)
        return r
    finally:
        proc.kill()
        proc.wait()


def stubs(port: int):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return job_pb2_grpc.JobServiceStub(channel), partition_pb2_grpc.PartitionServiceStub(channel)


def wait_empty(jobs, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not jobs.ListJobs(j.ListJobsRequest(), timeout=60).jobs:
            return
        time.sleep(0.05)
    raise TimeoutError("queue did not drain")


def cancel_all(jobs) -> None:
    jobs.CancelJobs(j.CancelJobsRequest(users=["bench"]), timeout=120)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def vipu_phases(phases: str, knobs: dict) -> dict[str, float]:
    r: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as state:
        proc, port = start_server(state, "bow-pod64")
        jobs, parts = stubs(port)
        env = {**os.environ, "VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": str(port), "VIPU_CLI_API_USER_ID": "bench"}
        if "a" in phases:
            compiled = build_compiled_client(Path(state))
            for clients in (1, knobs["CLIENTS"]):
                for hold in (False, True):
                    key = f"a_{clients}c{'_hold' if hold else ''}"
                    r[key], _ = submit_parallel(port, knobs["N_SUB"], clients, hold)
                    cancel_all(jobs)
                    wait_empty(jobs)
                    if compiled:
                        r[f"{key}_cxx"] = compiled_parallel(compiled, port, knobs["N_SUB"], clients, hold)
                        cancel_all(jobs)
                        wait_empty(jobs)
                    r[f"{key}_many"], _ = submit_parallel(port, knobs["N_SUB"], clients, hold, PER_CALL)
                    cancel_all(jobs)
                    wait_empty(jobs)
            n, start = 30, time.perf_counter()
            for _ in range(n):
                subprocess.run([str(BIN / "vipu"), "submit", "--ipus", "1", "--time-limit", "1m", "--duration", "0s",
                                "--hold"], env=env, check=True, capture_output=True)
            r["a_cli_1c"] = n / (time.perf_counter() - start)
            files = [Path(state) / f"spec-{k}.json" for k in range(PER_CALL)]
            for file in files:
                file.write_bytes(spec(hold=True))
            n, start = 5, time.perf_counter()
            for _ in range(n):
                subprocess.run([str(BIN / "vipu"), "submit", *map(str, files)], env=env, check=True,
                               capture_output=True)
            r["a_cli_1c_many"] = n * PER_CALL / (time.perf_counter() - start)
            cancel_all(jobs)
            wait_empty(jobs)
            r.update(transport_ceiling(knobs, compiled))
        if "b" in phases:
            running, done = [], []
            for _ in range(knobs["N_LAT"]):
                t0 = time.time()
                [job_id] = jobs.SubmitJob(j.SubmitJobRequest(spec=spec(), request_id=uuid.uuid4().hex), timeout=10).job_ids
                while True:
                    job = jobs.GetJob(j.GetJobRequest(id=job_id), timeout=10)
                    if job.state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
                        break
                    time.sleep(0.01)
                running.append(job.start_time - t0)
                done.append(job.end_time - t0)
                time.sleep(random.random() * 0.5)  # random phase, like the peer
            for name, values in (("start", running), ("done", done)):
                r[f"b_{name}_p50"], r[f"b_{name}_p99"] = pct(values, 50), pct(values, 99)
        if "c" in phases:
            start = time.perf_counter()
            submit_parallel(port, knobs["N_E2E"], 1, False)
            wait_empty(jobs)
            r["c_jobs"] = knobs["N_E2E"] / (time.perf_counter() - start)
            array = json.dumps({**TRIVIAL, "array": f"0-{knobs['N_E2E'] - 1}"}).encode()
            start = time.perf_counter()
            jobs.SubmitJob(j.SubmitJobRequest(spec=array, request_id=uuid.uuid4().hex), timeout=60)
            wait_empty(jobs)
            r["c_array"] = knobs["N_E2E"] / (time.perf_counter() - start)
        if "d" in phases:
            r["d_fill"], _ = submit_parallel(port, knobs["N_SQ"], knobs["CLIENTS"], True)
            for key, args in (("d_queue_s", ["queue"]), ("d_queue_json_s", ["queue", "--json"])):
                times = []
                for _ in range(3):
                    start = time.perf_counter()
                    subprocess.run([str(BIN / "vipu"), *args], env=env, check=True, capture_output=True)
                    times.append(time.perf_counter() - start)
                r[key] = statistics.median(times)
            start = time.perf_counter()
            subprocess.run([str(BIN / "vipu"), "cancel", "--user", "bench"], env=env, check=True, capture_output=True)
            r["d_cancel_s"] = time.perf_counter() - start
            wait_empty(jobs)
        if "e" in phases:
            _, acked = submit_parallel(port, knobs["N_CRASH"], knobs["CLIENTS"], True)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            start = time.perf_counter()
            proc, port = start_server(state, "bow-pod64", "--port", str(port))
            jobs, parts = stubs(port)
            while True:
                try:
                    parts.GetVersion(p.GetVersionRequest(), timeout=1)
                    break
                except grpc.RpcError:
                    time.sleep(0.01)
            r["e_restart_s"] = time.perf_counter() - start
            alive = {x.id for x in every_page(lambda r: jobs.ListJobs(r, timeout=60), j.ListJobsRequest()).jobs}
            r["e_accepted"], r["e_survived"] = len(acked), len(set(acked) & alive)
        proc.terminate()
        proc.wait()
    return r


SLURM_ROWS = {  # our key -> the peer's table label (its median column)
    "a_1c": r"a sbatch jobs/s, 1 client, N=", "a_4c": r"a sbatch jobs/s, 4 clients, N=",
    "a_1c_hold": r"a sbatch jobs/s, 1 client, --hold", "a_4c_hold": r"a sbatch jobs/s, 4 clients, --hold",
    "b_start_p50": r"b\[default\] submit->script running p50", "b_start_p99": r"b\[default\] submit->script running p99",
    "b_start_p50_tuned": r"b\[tuned\] submit->script running p50", "b_start_p99_tuned": r"b\[tuned\] submit->script running p99",
    "b_done_p50": r"b\[default\] submit->COMPLETED seen p50", "b_done_p99": r"b\[default\] submit->COMPLETED seen p99",
    "c_jobs": r"c e2e jobs/s, \d+ sbatch jobs \[default\]", "c_jobs_tuned": r"c e2e jobs/s, \d+ sbatch jobs \[tuned\]",
    "c_array": r"c e2e jobs/s, --array of \d+ \[default\]", "d_fill": r"d fill: sbatch --hold jobs/s",
    "d_queue_s": r"d squeue -h \| wc -l", "d_queue_json_s": r"d squeue --json \(s\)", "d_cancel_s": r"d scancel -u",
    "e_accepted": r"e\[immediate\] jobs accepted", "e_survived": r"e\[immediate\] jobs survived",
    "e_restart_s": r"e\[immediate\] restart -> 'scontrol ping' UP",
}


def parse_peer_table(table: str) -> dict[str, float]:
    """The peer prints `label` in 52 columns, then its median in 12: read the median of each row we compare."""
    values = {}
    for line in table.splitlines():
        label, median = line[:52].strip(), line[52:65].strip()
        for key, pattern in SLURM_ROWS.items():
            if key not in values and re.match(pattern, label):
                try:
                    values[key] = float(median)
                except ValueError:
                    pass
    return values


def slurm_phases(phases: str, knobs: dict) -> tuple[dict[str, float], str]:
    env = {**os.environ, "PHASES": phases, **{k: str(v) for k, v in knobs.items()}}
    out = subprocess.run(["bash", str(PEER)], env=env, capture_output=True, text=True, timeout=1500)
    table = out.stdout[out.stdout.find("===================="):]
    return parse_peer_table(table), table


ROWS = [  # key, label, better when (higher|lower), how vipu-sim is measured
    ("a_1c", "a submissions/s, 1 client", "higher", "gRPC client"),
    ("a_4c", "a submissions/s, 4 clients", "higher", "gRPC clients"),
    ("a_1c_hold", "a submissions/s, 1 client, --hold", "higher", "gRPC client"),
    ("a_4c_hold", "a submissions/s, 4 clients, --hold", "higher", "gRPC clients"),
    ("a_cli_1c", "a submissions/s, 1 client, `vipu submit` CLI", "higher", "a process per job"),
    ("a_1c_many", "a submissions/s, 1 client, 100 per call", "higher", "gRPC client, SubmitJobs"),
    ("a_4c_many", "a submissions/s, 4 clients, 100 per call", "higher", "gRPC clients, SubmitJobs"),
    ("a_1c_hold_many", "a submissions/s, 1 client, --hold, 100 per call", "higher", "gRPC client, SubmitJobs"),
    ("a_4c_hold_many", "a submissions/s, 4 clients, --hold, 100 per call", "higher", "gRPC clients, SubmitJobs"),
    ("a_cli_1c_many", "a submissions/s, 1 client, --hold, CLI, 100 files", "higher", "`vipu submit` of 100 specs"),
    ("a_1c_cxx", "a submissions/s, 1 client", "higher", "compiled gRPC client"),
    ("a_4c_cxx", "a submissions/s, 4 clients", "higher", "compiled gRPC clients"),
    ("a_1c_hold_cxx", "a submissions/s, 1 client, --hold", "higher", "compiled gRPC client"),
    ("a_4c_hold_cxx", "a submissions/s, 4 clients, --hold", "higher", "compiled gRPC clients"),
    ("a_1c_ceiling", "a ceiling: empty calls/s, bare server, 1 client", "higher", "gRPC client; vs sbatch"),
    ("a_4c_ceiling", "a ceiling: empty calls/s, bare server, 4 clients", "higher", "gRPC clients; vs sbatch"),
    ("a_1c_ceiling_cxx", "a ceiling: empty calls/s, bare server, 1 client", "higher", "compiled client; vs sbatch"),
    ("a_4c_ceiling_cxx", "a ceiling: empty calls/s, bare server, 4 clients", "higher", "compiled clients; vs sbatch"),
    ("b_start_p50", "b submit->running p50 (s), Slurm default", "lower", ""),
    ("b_start_p99", "b submit->running p99 (s), Slurm default", "lower", ""),
    ("b_start_p50_tuned", "b submit->running p50 (s), Slurm tuned", "lower", "same vipu-sim run"),
    ("b_start_p99_tuned", "b submit->running p99 (s), Slurm tuned", "lower", "same vipu-sim run"),
    ("b_done_p50", "b submit->completed p50 (s)", "lower", ""),
    ("b_done_p99", "b submit->completed p99 (s)", "lower", ""),
    ("c_jobs", "c 1,000 short jobs end to end, jobs/s (Slurm default)", "higher", "1 gRPC client"),
    ("c_jobs_tuned", "c 1,000 short jobs end to end, jobs/s (Slurm tuned)", "higher", "same vipu-sim run"),
    ("c_array", "c the same as one array, jobs/s", "higher", ""),
    ("d_fill", "d fill 10,000 held jobs, jobs/s", "higher", "4 gRPC clients"),
    ("d_queue_s", "d list 10,000 pending, text (s)", "lower", "`vipu queue` process"),
    ("d_queue_json_s", "d list 10,000 pending, JSON (s)", "lower", "`vipu queue --json`"),
    ("d_cancel_s", "d cancel all 10,000 (s)", "lower", "`vipu cancel --user`"),
    ("e_accepted", "e jobs acknowledged before kill -9", "", ""),
    ("e_survived", "e of those, survived the restart", "higher", ""),
    ("e_restart_s", "e restart -> serving again (s)", "lower", ""),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default="abcde")
    parser.add_argument("--skip-slurm", action="store_true", help="measure vipu-sim only")
    args = parser.parse_args()
    knobs = {"N_SUB": 2000, "CLIENTS": 4, "N_LAT": 50, "N_E2E": 1000, "N_SQ": 10000, "N_CRASH": 500, "REPS": 1}
    print(f"# bench_vs_slurm: {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}, {os.cpu_count()} cores,"
          f" Python {platform.python_version()}; knobs {knobs}")
    ours = vipu_phases(args.phases, knobs)
    theirs, table = ({}, "") if args.skip_slurm else slurm_phases(args.phases, knobs)
    ours["b_start_p50_tuned"], ours["b_start_p99_tuned"] = ours.get("b_start_p50"), ours.get("b_start_p99")
    ours["c_jobs_tuned"] = ours.get("c_jobs")
    for key in ("a_1c", "a_4c", "a_1c_hold", "a_4c_hold"):  # the same sbatch figure against each kind of client
        theirs[f"{key}_cxx"] = theirs[f"{key}_many"] = theirs.get(key)
    theirs["a_cli_1c_many"] = theirs.get("a_1c_hold")
    for clients in ("1c", "4c"):
        theirs[f"a_{clients}_ceiling"] = theirs[f"a_{clients}_ceiling_cxx"] = theirs.get(f"a_{clients}")
    print(f"\n{'metric':<54} {'vipu-sim':>10} {'Slurm':>10} {'ratio':>9}  vipu-sim measured by")
    for key, label, better, how in ROWS:
        a, b = ours.get(key), theirs.get(key)
        ratio = ""
        if a is not None and b not in (None, 0) and better:
            ratio = f"{a / b:.1f}x" if better == "higher" else f"{b / a:.1f}x" if a else "inf"
        count = key in ("e_accepted", "e_survived")  # job counts, not measurements: 0, not 0.000

        def fmt(v) -> str:
            return "-" if v is None else f"{v:,.0f}" if count or v >= 10 else f"{v:,.3f}"

        print(f"{label:<54} {fmt(a):>10} {fmt(b):>10} {ratio:>9}  {how}")
    print("ratio: how many times better vipu-sim is (higher rate, or lower time)")
    if table:
        print("\nThe Slurm peer's own table:\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
