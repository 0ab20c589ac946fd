"""`poprun`: start the instances of a program inside a job, each with the POPDIST_* variables PopDist reads, as
Graphcore's poprun does (`poprun --num-instances I --num-replicas R --ipus-per-replica N python train.py`).

Why checked against the job's partition: every replica needs its IPUs, and the job holds exactly its partition
(IPUOF_VIPU_API_PARTITION_ID, VIPU_PARTITION_IPUS), so replicas x IPUs per replica must be its size, and instances
run equal shares of the replicas; a layout that does not add up is refused with the arithmetic before anything runs.
So are the V-IPU server, partition and IPU-Link domains a script names (--vipu-server-host/-port, --vipu-partition,
--num-ilds) when they are not the job's. The options are PopRun's (poprun_options.py). Instance i runs replicas
i*R/I .. (i+1)*R/I - 1 (POPDIST_REPLICA_INDEX_OFFSET, POPDIST_NUM_LOCAL_REPLICAS).

Each instance runs in a process group of its own inside the job's session: a cancel or a time limit reaches them
all (the job's supervisor stops the whole session), and if one fails the others' groups are stopped, SIGKILL after
KILL_WAIT_S if deaf to SIGTERM (as mpirun stops the rest); poprun exits with the first failure's code.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import NamedTuple

from vipu.jobs.programs.poprun_options import notes, parse
from vipu.partition.node_names import expand

OUTSIDE = ("poprun runs inside a job, on the partition the job holds: put it in a batch script and submit that"
           " (vipu submit job.sh); no IPUOF_VIPU_API_PARTITION_ID is set here (a run that needs no IPUs:"
           " poprun --offline-mode=yes)")


class LayoutError(Exception):
    pass


class Layout(NamedTuple):
    partition: str | None  # None: --offline-mode outside a job
    size: int  # the partition's IPUs (0: none)
    instances: int
    replicas: int
    per: int  # IPUs per replica
    hosts: tuple[str, ...] = ()  # --host's, the instances divided evenly among them

    @property
    def per_host(self) -> int:
        return self.instances // max(len(self.hosts), 1)


def layout(args: argparse.Namespace, env: dict[str, str]) -> Layout:
    """The run's layout, or LayoutError naming the flag that does not agree with the job, or the arithmetic that
    does not add up, and the fix."""
    partition = env.get("IPUOF_VIPU_API_PARTITION_ID")
    offline = args.offline_mode
    if not partition and not offline:
        raise LayoutError(OUTSIDE)
    for flag, count in (("--ipus-per-replica", args.ipus_per_replica), ("--num-replicas", args.num_replicas),
                        ("--num-instances", args.num_instances), ("--num-ilds", args.num_ilds)):
        if count is not None and count < 1:  # a count, not a product that then fails to add up
            raise LayoutError(f"{flag} is {count}; give 1 or more")
    size = int(env.get("VIPU_PARTITION_IPUS", "0")) if partition else 0
    if partition:
        _same_server(args, env, partition, size)
    per = args.ipus_per_replica
    replicas = args.num_replicas if args.num_replicas is not None else max(size // per, 1)
    if not offline and (replicas < 1 or replicas * per != size):
        fits = max((d for d in range(1, min(per, size) + 1) if size % d == 0), default=1)  # IPUs per replica
        raise LayoutError(f"--num-replicas {replicas} x --ipus-per-replica {per} = {replicas * per} IPUs, but partition"
                          f" {partition} has {size}: give replicas x IPUs per replica = {size}"
                          f" (e.g. --num-replicas {size // fits} --ipus-per-replica {fits})")
    instances = args.num_instances
    if replicas % instances:
        divisors = ", ".join(str(d) for d in range(1, replicas + 1) if replicas % d == 0)
        raise LayoutError(f"--num-instances {instances} does not divide the {replicas} replicas: each instance runs as"
                          f" many replicas as the others; give one of {divisors}")
    hosts = _hosts(args.host, instances)
    if args.only_output_from_instance is not None and not 0 <= args.only_output_from_instance < instances:
        raise LayoutError(f"--only-output-from-instance {args.only_output_from_instance}: instances are 0 to"
                          f" {instances - 1} (--num-instances {instances}); give one of them")
    return Layout(partition, size, instances, replicas, per, hosts)


def _same_server(args: argparse.Namespace, env: dict[str, str], partition: str, size: int) -> None:
    """The V-IPU server, partition and IPU-Link domains a Graphcore script names must be the job's: a job runs on
    the partition made for it (slurm_<id>), and poprun here makes no other."""
    if args.vipu_partition not in (None, partition):
        raise LayoutError(f"--vipu-partition={args.vipu_partition}: this job holds partition {partition}"
                          " (IPUOF_VIPU_API_PARTITION_ID) and runs on it alone; give"
                          f" --vipu-partition={partition} (slurm_${{SLURM_JOBID}}) or leave it out")
    host = env.get("IPUOF_VIPU_API_HOST", "")
    if args.vipu_server_host is not None and not _same_host(args.vipu_server_host, host):
        raise LayoutError(f"--vipu-server-host={args.vipu_server_host}: this job's V-IPU server is {host}"
                          " (IPUOF_VIPU_API_HOST); give --vipu-server-host=$IPUOF_VIPU_API_HOST or leave it out")
    port = env.get("IPUOF_VIPU_API_PORT", "")
    if args.vipu_server_port is not None and str(args.vipu_server_port) != port:
        raise LayoutError(f"--vipu-server-port={args.vipu_server_port}: this job's V-IPU server listens on port"
                          f" {port} (IPUOF_VIPU_API_PORT); give --vipu-server-port=$IPUOF_VIPU_API_PORT or leave it"
                          " out")
    ilds = partition_ilds(env, size)
    if args.num_ilds is not None and args.num_ilds != ilds:
        raise LayoutError(f"--num-ilds {args.num_ilds}: partition {partition} spans {ilds} IPU-Link domain(s) of its"
                          f" {size} IPUs; give --num-ilds {ilds} or leave it out")


def partition_ilds(env: dict[str, str], size: int) -> int:
    """The IPU-Link domains the partition spans: its IPUs over a domain's, as POPLAR_TARGET_OPTIONS gives it
    (ipuLinkDomainSize: the partition's own size when it is smaller than a domain)."""
    try:
        domain = int(json.loads(env.get("POPLAR_TARGET_OPTIONS", "{}")).get("ipuLinkDomainSize", size))
    except (ValueError, AttributeError, TypeError, OverflowError):  # (not an object; null; Infinity)
        domain = size
    return max(-(-size // domain), 1) if domain > 0 else 1


def _same_host(given: str, host: str) -> bool:
    """Whether two names are one server: the same name, or names of the same address (localhost, 127.0.0.1)."""
    if given == host:
        return True
    try:
        addresses = [{a[4][0] for a in socket.getaddrinfo(name, None)} for name in (given, host)]
    except (OSError, UnicodeError):
        return False
    return bool(addresses[0] & addresses[1])


def _hosts(given: str | None, instances: int) -> tuple[str, ...]:
    """--host's names, which must share the instances evenly, as PopRun divides them."""
    if given is None:
        return ()
    try:
        hosts = tuple(expand(given))
    except ValueError as e:
        raise LayoutError(f"--host: {e}") from None
    if instances % len(hosts):
        raise LayoutError(f"--num-instances {instances} cannot be divided evenly among the {len(hosts)} hosts of"
                          f" --host={given}: give a multiple of {len(hosts)} instances, or fewer hosts")
    return hosts


def instance_environment(env: dict[str, str], i: int, instances: int, replicas: int, per: int,
                         per_host: int | None = None) -> dict[str, str]:
    """Instance i's variables; `per_host`: how many instances each --host runs, which number their local index."""
    local, on_host = replicas // instances, i % (per_host or instances)
    return {**env, "POPDIST_NUM_TOTAL_REPLICAS": str(replicas), "POPDIST_NUM_IPUS_PER_REPLICA": str(per),
            "POPDIST_NUM_LOCAL_REPLICAS": str(local), "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
            "POPDIST_REPLICA_INDEX_OFFSET": str(i * local), "POPDIST_LOCAL_INSTANCE_INDEX": str(on_host),
            "POPDIST_NUM_INSTANCES": str(instances), "POPDIST_INSTANCE_INDEX": str(i),
            # srun's for its tasks (src/common/env.c): an instance is a task
            "SLURM_NTASKS": str(instances), "SLURM_NPROCS": str(instances), "SLURM_PROCID": str(i),
            "SLURM_LOCALID": str(on_host)}


def topology(run: Layout) -> str:
    """What --print-topology prints: each instance with its replicas and their IPUs in the partition."""
    local = run.replicas // run.instances
    where = f"partition {run.partition}" if run.partition else "no partition (--offline-mode)"
    rows = [f"poprun topology: {where}, {run.instances} instance(s), {run.replicas} replica(s) of {run.per} IPU(s)"]
    for i in range(run.instances):
        first, last = i * local, (i + 1) * local - 1
        reps = str(first) if first == last else f"{first}-{last}"
        ipus = (f"{first * run.per}-{(last + 1) * run.per - 1}" if (last + 1 - first) * run.per > 1
                else str(first * run.per))
        host = f" on host {run.hosts[i // run.per_host]}" if run.hosts else ""
        rows.append(f"  instance {i}{host}: replicas {reps} on IPUs {ipus}")
    return "\n".join(rows)


KILL_WAIT_S = 10.0  # instances told to stop get this long before SIGKILL (within the job's own KillWait)
# What poprun passes on, as mpirun does (and srun, src/srun/srun_job.c's _srun_signal_mgr): USR1, USR2 and CONT to
# every instance as they came (a checkpoint before the time limit: sbatch --signal), TSTP as STOP (mpirun's); TERM,
# INT, HUP and QUIT stop them all: SIGTERM, then SIGKILL KILL_WAIT_S later (mpirun's TERM and INT; srun ends its
# tasks on TERM, HUP and QUIT). Others are not passed on, as neither passes them.
PASSED_ON = {signal.SIGUSR1: signal.SIGUSR1, signal.SIGUSR2: signal.SIGUSR2, signal.SIGCONT: signal.SIGCONT,
             signal.SIGTSTP: signal.SIGSTOP}
STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
HEARD = (*PASSED_ON, *STOPPING)


def launch(program: list[str], envs: list[dict[str, str]], shown: int | None) -> int:
    """Run an instance per environment; their output passes through (with several, each line tagged with its
    instance, unless only one instance's is shown). Returns poprun's exit code.

    Signals are heard by a thread of their own (sigtimedwait: it sees who sent each), blocked everywhere else and
    unblocked in the instances. Why who: the job's supervisor (VIPU_SUPERVISOR_PID) signals the instances itself
    (`vipu cancel -s USR1` reaches every process the script started), so what it sends poprun is not passed on
    again, which would run an instance's handler twice; a user's `kill -USR1` of poprun (a batch script's trap for
    `--signal=B:USR1`) is."""
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, HEARD)
    procs, readers = [], []
    try:
        for i, env in enumerate(envs):
            quiet = shown is not None and shown != i
            tag = None if len(envs) == 1 or shown is not None else f"[{i}] "
            pipe = subprocess.DEVNULL if quiet else (subprocess.PIPE if tag else None)
            # each instance its own process group (in the job's session, which the job's supervisor stops whole);
            # its signals as poprun's were before it blocked them
            procs.append(subprocess.Popen(program, env=env, stdout=pipe, stderr=pipe if pipe is not None else None,
                                          text=tag is not None, process_group=0,
                                          preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)))
            if tag:
                readers += [threading.Thread(target=_tagged, args=(stream, out, tag), daemon=True)
                            for stream, out in ((procs[-1].stdout, sys.stdout), (procs[-1].stderr, sys.stderr))]
    except BaseException:
        signal_instances(procs, range(len(procs)), signal.SIGKILL)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        raise
    for reader in readers:  # (started once no fork is left: preexec_fn and threads do not mix)
        reader.start()
    remaining = set(range(len(procs)))
    kill_at: float | None = None
    done = threading.Event()

    def stop(signal_them: bool = True) -> None:
        """A cancel of the job, or an instance failed: SIGTERM, then SIGKILL after KILL_WAIT_S. `signal_them`
        False: the job's supervisor sent the stop and signalled the instances itself (a second SIGTERM would run
        their handlers twice)."""
        nonlocal kill_at
        if signal_them:
            signal_instances(procs, list(remaining), signal.SIGTERM)  # (a copy: the main thread discards from it)
        kill_at = kill_at or time.monotonic() + KILL_WAIT_S

    hearing = threading.Thread(target=_hear, args=(procs, remaining, stop, done), daemon=True)
    hearing.start()
    first_failure = 0
    try:
        while remaining:
            pid, status = _wait([procs[i].pid for i in remaining], lambda: kill_at)
            if pid == 0:  # KILL_WAIT_S passed: the rest are deaf to SIGTERM
                signal_instances(procs, remaining, signal.SIGKILL)
                kill_at = math.inf
                continue
            ended = next((i for i in remaining if procs[i].pid == pid), None)
            if ended is None:
                continue
            remaining.discard(ended)
            procs[ended].returncode = os.waitstatus_to_exitcode(status)
            code = procs[ended].returncode
            if code != 0 and first_failure == 0:
                first_failure = code if code > 0 else 128 - code
                stop()  # as mpirun: one instance failed, the others stop
    finally:
        done.set()
        hearing.join()
        # (a USR1 that comes after this, as the instances end, ends poprun by its default action. Not set to be
        # ignored here: launch() also runs inside other processes, tests', whose children would inherit that)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    signal_instances(procs, range(len(procs)), signal.SIGKILL)  # what instances left running holds their output
    for reader in readers:  # the last lines of their output
        reader.join()
    return first_failure


def _hear(procs: list, remaining: set[int], stop, done: threading.Event) -> None:
    """Pass on each signal poprun gets (PASSED_ON, STOPPING) until `done`. What the job's supervisor sent is not
    passed on: it signalled the instances itself. Outside a job there is no supervisor (None: the kernel's and a
    terminal's signals carry sender 0)."""
    given = os.environ.get("VIPU_SUPERVISOR_PID")
    supervisor = int(given) if given else None
    while not done.is_set():
        heard = signal.sigtimedwait(HEARD, 0.1)
        if heard is None:
            continue
        if heard.si_signo in STOPPING:
            stop(heard.si_pid != supervisor)
        elif heard.si_pid != supervisor:
            signal_instances(procs, set(remaining), PASSED_ON[heard.si_signo])


def _wait(pids: list[int], kill_at) -> tuple[int, int]:
    """The next of `pids` to end, or (0, 0) once kill_at() has passed. It polls: a stop heard meanwhile sets the
    time to kill at."""
    while True:
        at = kill_at()
        if at is not None and time.monotonic() >= at:
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
        run = layout(args, env)
    except LayoutError as e:
        print(f"poprun: error: {e}", file=sys.stderr)
        return 2
    for line in notes(args):
        print(f"poprun: warning: {line}", file=sys.stderr)
    if args.print_topology:
        print(topology(run), flush=True)
    envs = [instance_environment({**env, **args.exported}, i, run.instances, run.replicas, run.per, run.per_host)
            for i in range(run.instances)]
    _say(args.verbosity, run, envs, args.exported)
    try:
        code = launch(args.program, envs, args.only_output_from_instance)
    except FileNotFoundError:
        print(f"poprun: error: {args.program[0]}: no such program; give a program on PATH or its path",
              file=sys.stderr)
        return 127
    if args.verbosity:
        print(f"poprun: {run.instances} instance(s) ended; exit code {code}", file=sys.stderr, flush=True)
    return code


def _say(verbosity: int, run: Layout, envs: list[dict[str, str]], exported: dict[str, str]) -> None:
    """-v: the run's layout, on stderr; -vv: each instance's variables too."""
    if not verbosity:
        return
    for line in topology(run).removeprefix("poprun topology: ").splitlines():
        print(f"poprun: {line}", file=sys.stderr)
    if run.partition:
        env = envs[0]
        print(f"poprun: V-IPU server {env.get('IPUOF_VIPU_API_HOST')}:{env.get('IPUOF_VIPU_API_PORT')}, partition"
              f" {run.partition} of {run.size} IPUs in {partition_ilds(env, run.size)} IPU-Link domain(s)",
              file=sys.stderr)
    for name, value in exported.items():
        print(f"poprun: -x {name}={value}: set in every instance", file=sys.stderr)
    if verbosity > 1:
        for i, env in enumerate(envs):
            told = " ".join(f"{k}={v}" for k, v in env.items() if k.startswith("POPDIST_") or k in (
                "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"))
            print(f"poprun: instance {i}: {told}", file=sys.stderr)
    sys.stderr.flush()


def run() -> None:
    """The `poprun` console script."""
    sys.exit(main())


if __name__ == "__main__":
    run()
