"""poprun's options, as Graphcore's PopRun names them: its user guide's `poprun --help` table, and what Graphcore's
own scripts pass (graphcore/examples: benchmarks.yml files and run scripts pass -vv/--vv, --host, --num-ilds,
--vipu-server-host/-port/-timeout, --vipu-partition, --vipu-allocation, --update/--reset/--remove-partition,
--sync-type, --executable-cache-path, --numa-aware, --mpi-global-args, --mpi-local-args, --print-topology=yes,
--offline-mode=yes; Graphcore's TensorFlow tests --process-placement=disabled). Each is either honoured
(launcher.py checks it against the job and acts on it) or taken with one line on stderr saying it has no effect
here and why, as `vipu submit` says of the #SBATCH flags it does not model. Nothing is invented: an option PopRun
lacks is refused as unrecognized, as PopRun refuses it.

How values are written, as PopRun's (Boost) parser reads them: `--flag value` or `--flag=value`; a yes/no option as
`--print-topology=yes` (yes/no, true/false, on/off, 1/0), `--numa-aware 1` (a Graphcore README's: a yes/no word
right after it is its value) or bare (yes). A value that itself starts with a dash is the option's value, not an
option of poprun's: graphcore/examples' PopDist test passes `--mpi-global-args --tag-output`. --mpi-global-args and
--mpi-local-args may be given more than once (Graphcore's TensorFlow tests pass `--mpi-global-args=--tag-output
--mpi-global-args=--allow-run-as-root`): they add up.
"""

from __future__ import annotations

import argparse
import shlex

YES, NO = ("yes", "true", "on", "1"), ("no", "false", "off", "0")
# PopRun's yes/no options
SWITCHES = ("--print-topology", "--offline-mode", "--numa-aware", "--update-partition", "--reset-partition",
            "--remove-partition")
MPI_ARGS = ("--mpi-global-args", "--mpi-local-args")
# option -> why it has no effect here, said on stderr when it is given
NO_EFFECT = {
    "--vipu-server-timeout": "poprun makes no request to the V-IPU server here, the job's partition being made"
                             " before its script starts (a program's own wait is IPUOF_VIPU_API_TIMEOUT: set it"
                             " with --mpi-local-args='-x IPUOF_VIPU_API_TIMEOUT=N')",
    "--vipu-partition-attempts": "the job's partition is ACTIVE before its script starts, so the first attempt binds",
    "--update-partition": "poprun changes no partition: the job's is made to its --ipus",
    "--reset-partition": "an emulated partition needs no reset before a run",
    "--remove-partition": "the job's partition is removed when the job ends, whatever poprun is told",
    "--vipu-cluster": "poprun makes no partition here: the job's is made in the allocation it ran in (-p)",
    "--vipu-allocation": "poprun makes no partition here: the job's is made in the allocation it ran in (-p)",
    "--executable-cache-path": "poprun compiles nothing here; a framework's own cache is the program's to set",
    "--numa-aware": "instances are not bound to host NUMA nodes here",
    # the user guide's launching.html ("--process-placement spreadnuma", its default); Graphcore's TensorFlow tests
    # pass =disabled
    "--process-placement": "instances are not bound to host NUMA nodes here",
    "--sync-type": "the emulated IPUs synchronise as the cost model says, whatever type is asked",
}


def _switch(flag: str):
    def read(value: str) -> bool:
        if value.lower() in YES + NO:
            return value.lower() in YES
        raise argparse.ArgumentTypeError(f"{flag}={value}: give yes or no")
    return read


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="poprun", usage="poprun [options] program [args...]",
                                description="Start the instances of a program inside a job, each with the POPDIST_*"
                                            " variables PopDist reads, as Graphcore's poprun does.")
    count, add = int, p.add_argument
    add("-H", "--host", metavar="HOSTS", help="hosts the instances are divided evenly among (host0,host1 or"
                                              " host[0-2,4]); they all run on this job's node here, numbered per host")
    add("--num-instances", type=count, default=1, metavar="I", help="host processes (default 1)")
    add("--num-replicas", type=count, metavar="R",
        help="replicas in all (default: the partition's IPUs / --ipus-per-replica)")
    add("--ipus-per-replica", type=count, default=1, metavar="N", help="IPUs each replica runs on (default 1)")
    add("--num-ilds", type=count, metavar="D", help="IPU-Link domains: checked against the job's partition")
    add("--vipu-server-host", metavar="HOST",
        help="the V-IPU server: checked against the job's (IPUOF_VIPU_API_HOST)")
    add("--vipu-server-port", type=count, metavar="PORT",
        help="its port: checked against the job's (IPUOF_VIPU_API_PORT)")
    add("--vipu-partition", metavar="NAME",
        help="the partition: checked against the job's (IPUOF_VIPU_API_PARTITION_ID)")
    add("--print-topology", type=_switch("--print-topology"), default=False, metavar="yes|no",
        help="=yes: print which instance runs which replicas")
    add("--only-output-from-instance", type=count, metavar="I", help="show only instance I's output")
    add("--offline-mode", type=_switch("--offline-mode"), default=False, metavar="yes|no",
        help="=yes: run without a partition (outside a job too); no layout is checked against one")
    add("--mpi-global-args", metavar="ARGS", action="append",
        help="mpirun's options: -x NAME=VALUE sets NAME in every instance; the rest have no effect here (poprun"
             " starts the instances itself)")
    add("--mpi-local-args", metavar="ARGS", action="append", help="as --mpi-global-args")
    add("-v", "--verbose", action="count", default=0, help="say on stderr what poprun does; -vv: more")
    add("--vv", action="store_true", help="as -vv")
    for flag in NO_EFFECT:
        kind = {"type": _switch(flag), "metavar": "yes|no"} if flag in SWITCHES else {"type": count} if flag in (
            "--vipu-server-timeout", "--vipu-partition-attempts") else {}
        add(flag, help="taken; no effect here (said on stderr)", **kind)
    add("program", nargs=argparse.REMAINDER, help="the program and its arguments")
    return p


def normalized(argv: list[str]) -> list[str]:
    """The command line with every option's value joined to it (--flag=value) up to the program, so that a value
    starting with a dash is not read as an option, and a yes/no option takes only a yes/no word as its value (else
    it is bare: yes), never the program."""
    actions = parser()._actions
    valued = {a for action in actions if action.nargs is None for a in action.option_strings}
    longs = [a for action in actions for a in action.option_strings if a.startswith("--")]
    out, i = [], 0
    while i < len(argv):
        token, i = argv[i], i + 1
        if token == "--" or not token.startswith("-"):
            return out + argv[i - 1:]
        name, eq, value = token.partition("=")
        spelled = [a for a in longs if a.startswith(name)] if name.startswith("--") and name not in longs else []
        if len(spelled) == 1:  # an abbreviation, as argparse and Boost take one: --num-instance
            name = spelled[0]
            token = f"{name}{eq}{value}"
        following = argv[i] if i < len(argv) else ""
        if name in SWITCHES and not eq:
            taken = following.lower() in YES + NO  # --numa-aware 1
            token, i = f"{name}={following if taken else 'yes'}", i + taken
        elif name in valued and not eq:
            token, i = f"{'--host' if name == '-H' else name}={following}", i + 1
        out.append(token)
    return out


def parse(argv: list[str]) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(normalized(argv))
    if args.program[:1] == ["--"]:
        args.program = args.program[1:]
    if not args.program:
        p.error("give the program to run, e.g. poprun --num-replicas 4 python train.py")
    args.verbosity = max(args.verbose, 2 if args.vv else 0)
    try:
        args.exported, args.mpi_unused = mpi_exports(args)
    except ValueError as e:
        p.error(str(e))
    return args


def mpi_exports(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    """What --mpi-global-args and --mpi-local-args say: mpirun's `-x NAME=VALUE`, the variables set in every
    instance (`-x NAME` alone passes on poprun's own, which the instances get anyway), and the rest, which poprun
    does not pass to an mpirun here."""
    exported, unused = {}, []
    for flag in MPI_ARGS:
        for given in _given(args, flag) or ():
            try:
                words = shlex.split(given)
            except ValueError as e:
                raise ValueError(f"{flag}={given!r}: {e}; quote it as a shell would") from None
            i = 0
            while i < len(words):
                if words[i] == "-x" and i + 1 < len(words):
                    name, eq, value = words[i + 1].partition("=")
                    if eq:
                        exported[name] = value
                    i += 2
                else:
                    unused.append(words[i])
                    i += 1
    return exported, unused


def _given(args: argparse.Namespace, flag: str):
    return getattr(args, flag[2:].replace("-", "_"))


def notes(args: argparse.Namespace) -> list[str]:
    """One line for each option given that has no effect here, naming it and why."""
    lines = []
    for flag, why in NO_EFFECT.items():
        value = _given(args, flag)
        if value is not None:
            shown = ("yes" if value else "no") if flag in SWITCHES else value
            lines.append(f"{flag}={shown} has no effect here: {why}")
    if args.mpi_unused:
        lines.append(f"{' '.join(args.mpi_unused)} (in --mpi-global-args/--mpi-local-args) has no effect here: poprun"
                     " starts its instances itself, not through mpirun; only -x NAME=VALUE is taken (NAME is set in"
                     " every instance)")
    if args.host is not None:
        lines.append(f"--host={args.host}: every instance runs on this job's node here; the hosts number them"
                     " (POPDIST_LOCAL_INSTANCE_INDEX, SLURM_LOCALID) as PopRun does on each host")
    return lines
