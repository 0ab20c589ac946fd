"""`vipu queue`'s command line as typer reads it; the listing is queue_listing.py's."""

from __future__ import annotations

import typer

from vipu.cli.context import JsonOption, ShortNoHeaderOption
from vipu.cli.queue_fields import LONG, START
from vipu.cli.queue_listing import MIN_JOB_AGE, queue_jobs


def later(ctx: typer.Context, param, value):
    """Record which of --me and -u/--user was given last: squeue keeps only that one (each sets its user list)."""
    if value and ctx.get_parameter_source(param.name).name == "COMMANDLINE":
        ctx.meta["who"] = param.name  # click calls the given options back in the order they were given
    return value


def register(app: typer.Typer) -> None:
    @app.command()
    def queue(
        ctx: typer.Context,
        user: list[str] = typer.Option(None, "--user", "-u", "--users", callback=later,
                                       help="only these users' jobs (a comma list, or the flag again); of -u and"
                                            " --me, the one given last holds, as in squeue"),
        me: bool = typer.Option(False, "--me", callback=later,
                                help="only your own jobs (as the controller knows you: under --secure, your access"
                                     " key's owner)"),
        state: list[str] = typer.Option(
            None, "--states", "-t", "--state",
            help="only these states: names or codes (PD, R, CD, ...) in a comma list, or all; an ended state lists"
                 f" jobs that ended in the last {MIN_JOB_AGE} s, as squeue does (Slurm's MinJobAge), but for those"
                 " still completing: CG alone lists them"),
        jobs: list[str] = typer.Option(None, "--jobs", "-j",
                                       help="only these jobs: N, N_T or N_[A-B], comma lists; one job the controller"
                                            " no longer has (ended over"
                                            f" {MIN_JOB_AGE} s ago, or none) exits 3, as squeue's Invalid job id;"
                                            " one that ended is listed only with -t (-t all), and a line on stderr"
                                            " says how it ended"),
        array: bool = typer.Option(False, "--array", "-r",
                                   help="a line for each pending array task (default: one line for a run of them)"),
        fmt: str = typer.Option(None, "--format", "-o",
                                help="squeue's %-format, e.g. '%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R' (see below),"
                                     " or %all for every field with | between; else SQUEUE_FORMAT"),
        names: str = typer.Option(None, "--Format", "-O",
                                  help="squeue's -O: field names, each NAME or NAME:[.]WIDTH, e.g."
                                       " JobID:8,Name:.12,State,ReasonList; else SQUEUE_FORMAT2"),
        long: bool = typer.Option(False, "--long", "-l", help=f"squeue's long format, {LONG!r}, with the time"),
        sort: str = typer.Option(None, "--sort", "-S",
                                 help="order by these field letters, - for descending, e.g. -S t,-p or -S i"
                                      " (default: running by start time, then pending in priority order)"),
        start: bool = typer.Option(False, "--start",
                                   help="pending jobs with their expected start (N/A when unknown), soonest first:"
                                        f" {START!r}, -S S, -t PD unless given"),
        iterate: int = typer.Option(None, "--iterate", "-i", min=1,
                                    help="list again every SECONDS, each time under the time (Ctrl-C ends it, exit 0)"),
        json_out: bool = JsonOption,
        no_header: bool = ShortNoHeaderOption,
        name: list[str] = typer.Option(None, "--name", "-n", help="only jobs of these names (a comma list); else"
                                                                   " SQUEUE_NAMES"),
        partition: list[str] = typer.Option(None, "--partition", "-p",
                                            help="only jobs in these V-IPU allocations (Slurm's partitions; a comma"
                                                 " list, e.g. default); else SQUEUE_PARTITION"),
        qos: list[str] = typer.Option(None, "--qos", "-q", help="only jobs of these QOS (a comma list); else"
                                                                " SQUEUE_QOS"),
        account: list[str] = typer.Option(None, "--account", "-A", help="only jobs of these accounts (a comma"
                                                                        " list); else SQUEUE_ACCOUNT"),
        nodelist: list[str] = typer.Option(None, "--nodelist", "-w",
                                           help="only jobs running on these IPU-Machines (Slurm's nodes, as %N"
                                                " names them; a comma list or ag[00-03])"),
    ):
        """Pending and running jobs (squeue), running first, then pending in priority order; pending tasks of an
        array that wait for the same reason share a line, 26_[10-99] (with --json, or -r, a line each).

        Filters narrow: a job is listed when it matches every one given. A flag not given is read from squeue's
        variable: SQUEUE_USERS, SQUEUE_STATES, SQUEUE_NAMES, SQUEUE_PARTITION, SQUEUE_QOS, SQUEUE_ACCOUNT,
        SQUEUE_ARRAY (-r), SQUEUE_FORMAT, SQUEUE_FORMAT2, SQUEUE_SORT.

        Formats (-o, -l, --start, SQUEUE_FORMAT): %i job id (26_3), %A job id (unique), %F array job id, %K array
        task id, %j name, %u user, %a account, %q QOS, %t and %T state, %r reason, %R reason or nodes, %M time
        used, %l time limit, %L time left, %S start (expected, for a pending job), %V submit, %e end, %Q and %p
        priority, %y nice, %E dependency, %C IPUs (Slurm's CPUs), %D IPU-Machines (Slurm's nodes), %N their
        names, %B the first, %b IPUs per machine (gres/ipu:N), %n and %x the machines asked for and excluded
        (sbatch -w, -x), %P the V-IPU allocation (Slurm's partition), %o the command (as show job's Command=), %Z
        the working folder, %k the comment (sbatch --comment), %Y (null); %.Nx right-justifies in N characters,
        %Nx and %-Nx left-justify, and both cut a longer value.

        -O names (the same fields, as man squeue names them): JobID, JobArrayID, ArrayJobID, ArrayTaskID, Name,
        UserName, Account, QOS, State, StateCompact, Reason, ReasonList, TimeUsed, TimeLimit, TimeLeft,
        StartTime, SubmitTime, EndTime, Priority, PriorityLong, Nice, Dependency, NumCPUs, IPUs (vipu's own),
        NumNodes, NodeList, ReqNodes, ExcNodes, BatchHost, tres-per-node, Partition, SchedNodes, Command, WorkDir,
        Comment.

        --json: squeue --json's shape: {"jobs": [...], "meta": {...}, "errors": [], "warnings": []}, each job with
        Slurm's field names and typed values, plus ipus, vipu_partition, modelled and time_limit_s."""
        if user and me:  # squeue: the later one replaces the other's user list
            user, me = (None, me) if ctx.meta.get("who") == "me" else (user, False)
        queue_jobs(ctx.obj, user, me, state, jobs, array, fmt, names, long, sort, start, iterate, json_out, no_header,
                   name, partition, qos, account, nodelist)
