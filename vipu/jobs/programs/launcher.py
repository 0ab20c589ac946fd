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
            "POPDIST_NUM_INSTANCES": str(instances), "POPDIST_INSTANCE_INDEX": str(i),
            # srun's for its tasks (src/common/env.c): an instance is a task, all on this node
            "SLURM_NTASKS": str(instances), "SLURM_NPROCS": str(instances), "SLURM_PROCID": str(i),
            "SLURM_LOCALID": str(i)}


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
