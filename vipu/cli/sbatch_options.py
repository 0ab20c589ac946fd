"""`vipu submit`'s options (sbatch's), each defined once: its names, what it takes, the spec field it sets, the
#SBATCH line and SBATCH_* variable that stand in for it, and what is said of one vipu-sim does not model.

Read by submit_command.py (typer's options, in this order: `vipu submit --help` and docs/cli.md), fast_path.py (the
same command line read without typer), batch_directives.py (#SBATCH lines), sbatch_environment.py (the variables),
submit.py (the fields, and the flag a refusal of one names) and sbatch_unmodelled.py (warned or refused). So an
sbatch flag vipu takes, warns of or refuses is one entry here. Plain Python: the fast path imports it on every
`vipu submit`, and `vipu queue` through fast_path, so nothing here may import typer, rich or pydantic.
"""

from __future__ import annotations

TEXT, INT, FLAG, SWITCH = "text", "int", "flag", "switch"  # a string; a whole number; on; on or off (--no-...)
ON = "on"  # `reads` of a #SBATCH flag: it takes no value


class SbatchOption:
    """One option: a plain class, not a dataclass or NamedTuple, whose making costs the fast path several times
    this whole table's (bench/bench_cli.py)."""

    __slots__ = ("param", "names", "kind", "help", "field", "reads", "off", "vipu_only", "bare", "variable",
                 "warning", "refusal", "past")

    def __init__(self, param: str, names: tuple[str, ...], kind: str = TEXT, help: str | None = None,
                 field: str | None = None, reads: str | None = None, off: tuple[str, ...] = (),
                 vipu_only: tuple[str, ...] = (), bare: object = None, variable: str | None = None,
                 warning: str | None = None, refusal: str | None = None, past: str | None = None):
        self.param = param  # submit_jobs' keyword and typer's parameter
        self.names = names  # on the command line, the first as `vipu submit --help` shows it
        self.kind = kind
        self.help = help
        self.field = field  # the spec's field (or chdir, export, a flag sbatch_unmodelled says) it sets; None:
        # submit.py reads the value itself
        self.reads = reads  # a #SBATCH line's value, checked by batch_directives.READERS[reads] (ON: none); None:
        # no #SBATCH line takes it
        self.off = off  # a SWITCH's names that turn it off
        self.vipu_only = vipu_only  # names that are vipu's, not sbatch's: no #SBATCH line takes them
        self.bare = bare  # its value when given without one (sbatch's --nice is 100): see bare_before()
        self.variable = variable  # sbatch's input variable that stands in for it (sbatch_environment.py)
        self.warning = warning  # taken with this warning: the job runs as asked in all that matters here
        self.refusal = refusal  # refused (exit 2) with this, why not and what to do instead
        self.past = past  # an INT's bound past the wire, by its name in params.PAST (the controller's, not int32's)

    @property
    def sbatch_names(self) -> tuple[str, ...]:
        """Its names as sbatch spells them, short first: -J, --job-name."""
        names = [n for n in self.names if n not in self.vipu_only]
        return tuple(sorted(names, key=lambda n: n.startswith("--")))

    @property
    def shown(self) -> str:
        """How a message names it: -J/--job-name."""
        return "/".join(self.sbatch_names or self.names)

    @property
    def default(self) -> object:
        """What typer passes when it is not given (submit_jobs' default too)."""
        return False if self.kind == FLAG else None


def bare_before(bare: object, following: str | None) -> bool:
    """Whether an option whose value is optional, `bare` when left out (None: a value it must have), takes it where
    `following` is the next word (None: none). sbatch's getopt reads an optional value only attached (--nice=5); a
    whole number as the next word (--nice 5, --nice -5) is its value here, as it always was, on the command line
    and in a #SBATCH line alike."""
    if bare is None:
        return False
    digits = following[1:] if following and following[0] in "+-" else following
    return not (digits and digits.isascii() and digits.isdigit())


OPTIONS = (
    SbatchOption("name", ("--job-name", "-J", "--name"), help="job name (a script's: its file name)", field="name",
                 reads="text", vipu_only=("--name",), variable="SBATCH_JOB_NAME"),
    SbatchOption("ipus", ("--ipus",), INT, "IPUs: a power of two", "ipus", "count", past="pod_ipus"),
    SbatchOption("time", ("--time", "-t"), help="time limit as sbatch reads it: {FORMS}", field="time_limit",
                 reads="time", variable="SBATCH_TIMELIMIT"),
    SbatchOption("time_limit", ("--time-limit",), help="e.g. 90s, 10m, 1h30m, 1-00:00:00: a unit or colons, never a"
                 " bare number (-t/--time reads 90 as minutes)"),
    SbatchOption("duration", ("--duration",), help="a sleep workload of this length (e.g. 30s)"),
    SbatchOption("wrap", ("--wrap",), help="run this shell command: a batch script of #!/bin/sh and it (sbatch"
                 " --wrap)"),
    SbatchOption("qos", ("--qos", "-q"), help="request a quality of service for the job: one of vipu-server's"
                 " --scheduler-config qos (default: its default_qos, normal); one name, not sbatch's list",
                 field="qos", reads="text", variable="SBATCH_QOS"),
    SbatchOption("user", ("--user",), help="submit the job as this user (sbatch --uid, by name only); only an admin"
                 " may name another user (under --secure; an open controller trusts every caller); default: the"
                 " caller", field="user"),
    SbatchOption("account", ("--account", "-A"), help="charge resources used by this job to this account: an"
                 " arbitrary name, counted against max_submit_jobs_per_account and a QOS's max_jobs_per_account",
                 field="account", reads="text", variable="SBATCH_ACCOUNT"),
    SbatchOption("nice", ("--nice",), INT, "run the job with an adjusted scheduling priority: -10000 to 10000"
                 " (sbatch's range is wider), negative raises it (admins only); --nice alone is 100, as sbatch's",
                 field="nice", reads="nice", bare=100, past="nice"),
    SbatchOption("dependency", ("--dependency", "-d"), help="afterok:ID,afterany:ID,afternotok:ID,after:ID[+MINUTES],aftercorr:ID,singleton",
                 field="dependency", reads="dependency"),
    SbatchOption("array", ("--array", "-a"), help="e.g. 0-99%10", field="array", reads="array",
                 variable="SBATCH_ARRAY_INX"),
    SbatchOption("hold", ("--hold", "-H"), SWITCH, "submit held (release with vipu release)", "hold", ON,
                 off=("--no-hold",), vipu_only=("--no-hold",)),
    SbatchOption("begin", ("--begin", "-b"), help="not before this time (BeginTime), as sbatch takes it: 16:00,"
                 " teatime, tomorrow, 11/22-16:00, now+10m, now+1hour, now+90 (seconds), or ISO-8601 like"
                 " 2026-11-22T14:00:00 (local time unless it ends in Z or +01:00)", field="begin", reads="begin"),
    SbatchOption("requeue", ("--requeue",), SWITCH, "requeue after a node failure", "requeue", ON,
                 off=("--no-requeue",)),  # its variables, SBATCH_REQUEUE and SBATCH_NO_REQUEUE: sbatch_environment
    SbatchOption("allocation", ("--allocation", "--partition", "-p"), help="V-IPU allocation to run in (Slurm's"
                 " partition)", field="allocation", reads="text", vipu_only=("--allocation",),
                 variable="SBATCH_PARTITION"),
    SbatchOption("nodelist", ("--nodelist", "-w"), help="IPU-Machines (nodes, vipu info -N) the job must hold, a host"
                 " list such as ag[00-01]; more with more IPUs: the aligned block of its size around them",
                 field="nodelist", reads="hostlist"),
    SbatchOption("exclude", ("--exclude", "-x"), help="IPU-Machines the job must not run on, e.g. ag[02-03]",
                 field="exclude", reads="hostlist"),
    SbatchOption("output", ("--output", "-o"), help="the job's output file, relative to its working directory; %j"
                 " job id, %A array job, %a task, %x name, %u user, %J id (and step: none for a script), %N first IPU-Machine (see the"
                 " spec); the controller writes it, never over a file it did not write for this job or an earlier"
                 " one of yours (but --open-mode=append adds to a file of your own)", field="output", reads="text",
                 variable="SBATCH_OUTPUT"),
    SbatchOption("error_file", ("--error", "-e"), help="a batch script's stderr (default: with its output); patterns"
                 " as -o", field="error", reads="text", variable="SBATCH_ERROR"),
    SbatchOption("chdir", ("--chdir", "-D"), help="a batch script's working directory (default: here)",
                 field="chdir", reads="text"),
    SbatchOption("export", ("--export",), help="the environment a batch script gets: ALL (default), NONE, or"
                 " ALL,VAR=value,... or VAR1,VAR2=value (only those), as sbatch", field="export", reads="export",
                 variable="SBATCH_EXPORT"),
    SbatchOption("propagate", ("--propagate",), help="the soft resource limits of this shell a batch script gets"
                 " (ulimit -n, -u, ...): all by default, as Slurm's PropagateResourceLimits=ALL; --propagate=NONE"
                 " none, or a list such as NOFILE,NPROC (each at most the node's hard limit, or not set); --propagate"
                 " alone is ALL", field="propagate", reads="propagate", bare="ALL"),
    SbatchOption("request_id", ("--request-id",), help="a retry with the same id never queues twice (with several"
                 " specs, each gets ID/1, ID/2, ...)"),
    SbatchOption("parsable", ("--parsable",), FLAG, "print only the job id (an array's: its first task's), as sbatch"
                 " --parsable, e.g. jid=$(vipu submit --parsable ...)"),
    SbatchOption("test_only", ("--test-only",), FLAG, "queue nothing: check the job and print when it would start if"
                 " queued now (sbatch --test-only)"),
    SbatchOption("json_out", ("--json", "--showjson"), FLAG, "{JSON_HELP}: job_ids (every job), duplicate (all were"
                 " queued before, by these request ids), jobs (job_ids and duplicate per spec)"),
    SbatchOption("wait", ("--wait", "-W"), FLAG, "wait for the jobs queued to end, then exit with their highest exit"
                 " code (1 for one a signal ended), as sbatch -W (SBATCH_WAIT too)", field="wait", reads=ON,
                 variable="SBATCH_WAIT"),
    SbatchOption("open_mode", ("--open-mode",), help="a batch script's output and error files: truncate (the default:"
                 " each run starts them afresh) or append (each run adds to them; a file of your own from before is"
                 " added to, where truncate refuses it)", field="open_mode", reads="text",
                 variable="SBATCH_OPEN_MODE"),
    SbatchOption("comment", ("--comment",), help="any text kept with the job (at most 1024 characters), as sbatch"
                 " --comment: squeue %k, sacct's Comment, show job's Comment=", field="comment", reads="text"),
    # sbatch's flags vipu-sim does not model: taken only to be warned of or refused (sbatch_unmodelled.py)
    SbatchOption("mail_type", ("--mail-type",), help="accepted with a warning: no mail is sent", field="mail_type",
                 reads="text", warning="sends no mail: the controller has none; watch the job with vipu queue -j ID"),
    SbatchOption("mail_user", ("--mail-user",), help="accepted with a warning: no mail is sent", field="mail_user",
                 reads="text", warning="sends no mail: the controller has none; watch the job with vipu queue -j ID"),
    SbatchOption("time_min", ("--time-min",), help="accepted with a warning: the whole -t limit holds",
                 field="time_min", reads="time", warning="is not used: the job gets its whole -t/--time limit"
                 " (backfill here never shortens one)"),
    SbatchOption("exclusive", ("--exclusive",), FLAG, "accepted with a warning: a job's IPUs are always its own",
                 "exclusive", ON, warning="changes nothing: a job's IPUs are its own; its IPU-Machine's other IPUs"
                 " may run other jobs (--ipus 4 or more takes whole machines)"),
    SbatchOption("nodes", ("--nodes", "-N"), help="IPU-Machines (nodes, vipu info -N) where --ipus is not given: -N 2"
                 " is --ipus 8 on a Pod of 4-IPU machines; a power of two; min-max only as one count (2-2); at least"
                 " the nodes -w lists, which alone (no -N, no --ipus) are the job's size",
                 field="nodes", reads="nodes"),  # no variable: sbatch reads none for -N (src/sbatch/opt.c env_vars)
    SbatchOption("ntasks", ("--ntasks", "-n"), help="1 only (a job runs its script once); more is refused: start"
                 " processes in the script with poprun --num-instances N", field="ntasks", reads="count"),
    SbatchOption("ntasks_per_node", ("--ntasks-per-node",), help="1 only, as -n/--ntasks", field="ntasks_per_node",
                 reads="count"),
    SbatchOption("cpus_per_task", ("--cpus-per-task", "-c"), help="accepted with a warning: no host CPUs are"
                 " allotted", field="cpus_per_task", reads="count", warning="is not used: the controller allots no"
                 " host CPUs (a job's script may use the host's); a job is sized by its IPUs, --ipus N"),
    SbatchOption("mem", ("--mem",), help="accepted with a warning: no host memory is allotted", field="mem",
                 reads="text", warning="is not used: the controller allots no host memory (a job's script may use"
                 " the host's); an IPU's memory is its tile SRAM and Streaming Memory, which vipu plan SPEC shows a"
                 " job needs"),
    SbatchOption("mem_per_cpu", ("--mem-per-cpu",), help="accepted with a warning, as --mem", field="mem_per_cpu",
                 reads="text", warning="is not used: the controller allots no host CPUs or memory; a job is sized by"
                 " its IPUs, --ipus N"),
    SbatchOption("gres", ("--gres",), help="refused: give --ipus N (--gres=ipu:4 is --ipus 4)", field="gres",
                 reads="text", refusal="a job asks for IPUs with --ipus N, Graphcore's Slurm plugin's option"
                 " (--gres=ipu:4 is --ipus 4)"),
    SbatchOption("deadline", ("--deadline",), help="refused: no deadline ends a job here", field="deadline",
                 reads="text", refusal="the scheduler ends no pending job that cannot finish by a deadline (Slurm's"
                 " DEADLINE state is not modelled); give -t/--time and cancel what is late (vipu cancel ID)"),
    SbatchOption("priority", ("--priority",), help="refused: an admin sets it after the submit (vipu update job)",
                 field="priority", reads="text", refusal="a job's priority is set after the submit, by an admin (as"
                 " in Slurm, operators only): vipu update job ID Priority=N"),
    SbatchOption("signal", ("--signal",), help="[B:]SIG[@TIME]: a batch script's processes get SIG TIME seconds"
                 " (default 60) before its time limit, the script alone with B:, as sbatch", field="signal",
                 reads="text", variable="SBATCH_SIGNAL"),
    SbatchOption("kill_on_invalid_dep", ("--kill-on-invalid-dep",), help="no (the default, and all there is here);"
                 " yes is refused", field="kill_on_invalid_dep", reads="text"),
)
BY_PARAM = {o.param: o for o in OPTIONS}
BY_FIELD = {o.field: o for o in OPTIONS if o.field is not None}
