"""`poprun`: start the instances of a program inside a job, each with the POPDIST_* variables PopDist reads, as
Graphcore's poprun does (`poprun --num-instances I --num-replicas R --ipus-per-replica N python train.py`).

Why checked against the job's partition: every replica needs its IPUs, and the job holds exactly its partition
(IPUOF_VIPU_API_PARTITION_ID, VIPU_PARTITION_IPUS), so replicas x IPUs per replica must be its size, and instances
run equal shares of the replicas; a layout that does not add up is refused with the arithmetic before anything runs.
Instance i runs replicas i*R/I .. (i+1)*R/I - 1 (POPDIST_REPLICA_INDEX_OFFSET, POPDIST_NUM_LOCAL_REPLICAS).

Each instance runs in a process group of its own inside the job's session: a cancel or a time limit reaches them
all (the job's supervisor stops the whole session), and if one fails the others' groups are stopped, SIGKILL after
KILL_WAIT_S if deaf to SIGTERM (as mpirun stops the rest); poprun exits with the first failure's code.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import threading
import time

OUTSIDE = ("poprun runs inside a job, on the partition the job holds: put it in a batch script and submit that"
           " (vipu submit job.sh); no IPUOF_VIPU_API_PARTITION_ID is set here")


class LayoutError(Exception):
    pass


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="poprun", description=" ".join(__doc__.split("\n\n")[0].split()),
                                     usage="poprun [options] program [args...]")
    parser.add_argument("--num-instances", type=int, default=1, help="host processes (default 1)")
    parser.add_argument("--num-replicas", type=int, default=None,
                        help="replicas in all (default: the partition's IPUs / --ipus-per-replica)")
    parser.add_argument("--ipus-per-replica", type=int, default=1, help="IPUs each replica runs on (default 1)")
    parser.add_argument("--print-topology", action="store_true", help="print which instance runs which replicas")
    parser.add_argument("--only-output-from-instance", type=int, default=None, metavar="I",
                        help="show only instance I's output (the others' is dropped)")
    parser.add_argument("--vipu-partition", default=None, help="the partition to run on (default: the job's)")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="the program and its arguments")
    args = parser.parse_args(argv)
    if not args.program:
        parser.error("give the program to run, e.g. poprun --num-replicas 4 python train.py")
    return args


def layout(args: argparse.Namespace, env: dict[str, str]) -> tuple[str, int, int, int, int]:
    """(partition, its IPUs, instances, replicas, IPUs per replica), or LayoutError saying what does not add up."""
    partition = env.get("IPUOF_VIPU_API_PARTITION_ID")
    if not partition:
        raise LayoutError(OUTSIDE)
    if args.vipu_partition not in (None, partition):
        raise LayoutError(f"--vipu-partition {args.vipu_partition}: this job holds partition {partition}, and a job"
                          " runs on its own; leave --vipu-partition out")
    size = int(env.get("VIPU_PARTITION_IPUS", "0"))
    per = args.ipus_per_replica
    for flag, count in (("--ipus-per-replica", per), ("--num-replicas", args.num_replicas),
                        ("--num-instances", args.num_instances)):
        if count is not None and count < 1:  # a count, not a product that then fails to add up
            raise LayoutError(f"{flag} is {count}; give 1 or more")
    replicas = args.num_replicas if args.num_replicas is not None else size // per
    if replicas < 1 or replicas * per != size:
        fits = max((d for d in range(1, min(per, size) + 1) if size % d == 0), default=1)  # IPUs per replica
        raise LayoutError(f"--num-replicas {replicas} x --ipus-per-replica {per} = {replicas * per} IPUs, but partition"
                          f" {partition} has {size}: give replicas x IPUs per replica = {size}"
                          f" (e.g. --num-replicas {size // fits} --ipus-per-replica {fits})")
    instances = args.num_instances
    if replicas % instances:
        divisors = ", ".join(str(d) for d in range(1, replicas + 1) if replicas % d == 0)
        raise LayoutError(f"--num-instances {instances} does not divide the {replicas} replicas: each instance runs as"
                          f" many replicas as the others; give one of {divisors}")
    if args.only_output_from_instance is not None and not 0 <= args.only_output_from_instance < instances:
        raise LayoutError(f"--only-output-from-instance {args.only_output_from_instance}: instances are 0 to"
                          f" {instances - 1} (--num-instances {instances}); give one of them")
    return partition, size, instances, replicas, per


def instance_environment(env: dict[str, str], i: int, instances: int, replicas: int, per: int) -> dict[str, str]:
    local = replicas // instances
    return {**env, "POPDIST_NUM_TOTAL_REPLICAS": str(replicas), "POPDIST_NUM_IPUS_PER_REPLICA": str(per),
            "POPDIST_NUM_LOCAL_REPLICAS": str(local), "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
            "POPDIST_REPLICA_INDEX_OFFSET": str(i * local), "POPDIST_LOCAL_INSTANCE_INDEX": str(i),
            "POPDIST_NUM_INSTANCES": str(instances), "POPDIST_INSTANCE_INDEX": str(i)}


def topology(partition: str, instances: int, replicas: int, per: int) -> str:
    """What --print-topology prints: each instance with its replicas and their IPUs in the partition."""
    local = replicas // instances
    rows = [f"poprun topology: partition {partition}, {instances} instance(s), {replicas} replica(s) of {per} IPU(s)"]
    for i in range(instances):
        first, last = i * local, (i + 1) * local - 1
        reps = str(first) if first == last else f"{first}-{last}"
        ipus = f"{first * per}-{(last + 1) * per - 1}" if (last + 1 - first) * per > 1 else str(first * per)
        rows.append(f"  instance {i}: replicas {reps} on IPUs {ipus}")
    return "\n".join(rows)


KILL_WAIT_S = 10.0  # instances told to stop get this long before SIGKILL (within the job's own KillWait)


def launch(program: list[str], envs: list[dict[str, str]], shown: int | None) -> int:
    """Run an instance per environment; their output passes through (with several, each line tagged with its
    instance, unless only one instance's is shown). Returns poprun's exit code."""
    procs, readers = [], []
    for i, env in enumerate(envs):
        quiet = shown is not None and shown != i
        tag = None if len(envs) == 1 or shown is not None else f"[{i}] "
        pipe = subprocess.DEVNULL if quiet else (subprocess.PIPE if tag else None)
        # each instance its own process group (in the job's session, which the job's supervisor stops whole)
        procs.append(subprocess.Popen(program, env=env, stdout=pipe, stderr=pipe if pipe is not None else None,
                                      text=tag is not None, process_group=0))
        if tag:
            for stream, out in ((procs[-1].stdout, sys.stdout), (procs[-1].stderr, sys.stderr)):
                readers.append(threading.Thread(target=_tagged, args=(stream, out, tag), daemon=True))
                readers[-1].start()
    remaining = set(range(len(procs)))
    kill_at = None

    def stop(*_) -> None:  # a cancel of the job, or an instance failed: SIGTERM, then SIGKILL after KILL_WAIT_S
        nonlocal kill_at
        signal_instances(procs, remaining, signal.SIGTERM)
        kill_at = kill_at or time.monotonic() + KILL_WAIT_S

    signal.signal(signal.SIGTERM, stop)
    first_failure = 0
    while remaining:
        pid, status = _wait([procs[i].pid for i in remaining], kill_at)
        if pid == 0:  # KILL_WAIT_S passed: the rest are deaf to SIGTERM
            signal_instances(procs, remaining, signal.SIGKILL)
            kill_at = math.inf
            continue
        done = next((i for i in remaining if procs[i].pid == pid), None)
        if done is None:
            continue
        remaining.discard(done)
        procs[done].returncode = os.waitstatus_to_exitcode(status)
        code = procs[done].returncode
        if code != 0 and first_failure == 0:
            first_failure = code if code > 0 else 128 - code
            stop()  # as mpirun: one instance failed, the others stop
    signal_instances(procs, range(len(procs)), signal.SIGKILL)  # what instances left running holds their output
    for reader in readers:  # the last lines of their output
        reader.join()
    return first_failure


def _wait(pids: list[int], kill_at: float | None) -> tuple[int, int]:
    """The next of `pids` to end, or (0, 0) once kill_at has passed. It polls: a blocking wait would go on waiting
    after the SIGTERM handler set kill_at (Python retries the call)."""
    while True:
        if kill_at is not None and time.monotonic() >= kill_at:
            return 0, 0
        for pid in pids:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return done, status
        time.sleep(0.05)


def signal_instances(procs: list, which, sig: int) -> None:
    """Signal each instance's process group: the instance and what it started."""
    for i in which:
        try:
            os.killpg(procs[i].pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _tagged(stream, out, tag: str) -> None:
    for line in stream:
        out.write(tag + line)
        out.flush()


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    try:
        partition, _, instances, replicas, per = layout(args, env)
    except LayoutError as e:
        print(f"poprun: error: {e}", file=sys.stderr)
        return 2
    if args.print_topology:
        print(topology(partition, instances, replicas, per), flush=True)
    envs = [instance_environment(env, i, instances, replicas, per) for i in range(instances)]
    try:
        return launch(args.program, envs, args.only_output_from_instance)
    except FileNotFoundError:
        print(f"poprun: error: {args.program[0]}: no such program; give a program on PATH or its path",
              file=sys.stderr)
        return 127


def run() -> None:
    """The `poprun` console script."""
    sys.exit(main())


if __name__ == "__main__":
    run()
