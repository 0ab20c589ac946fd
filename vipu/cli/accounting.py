"""`vipu history`: sacct's options, read as sacct reads them (man sacct), over the jobs the controller remembers.
There are no job steps here (a job is one allocation, one run at a time), so -X changes nothing."""

from __future__ import annotations

import math
import os
import time

import typer

from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, fail, warn
from vipu.cli.job_detail import exit_code, job_data
from vipu.cli.job_ids import job_id
from vipu.cli.job_selection import given, job_ids, job_states, selected_users, split
from vipu.cli.nodes import Machines, blocks_of
from vipu.cli.output import print_json, table
from vipu.cli.queue_fields import FULL, NODES, JobRow, reason
from vipu.cli.queue_rows import eligible_of
from vipu.cli.slurm_dates import FORMS, parse_slurm_time
from vipu.cli.slurm_format import Column, sacct_fields, sacct_render
from vipu.cli.slurm_time import limit, raw_minutes, stamp
from vipu.client.messages import seconds
from vipu.scheduler.job_states import JobState
from vipu.v1 import job_pb2 as j


def elapsed(seconds: float) -> str:
    """sacct's Elapsed: HH:MM:SS, or D-HH:MM:SS."""
    seconds = int(max(0, seconds))
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _ran(row: JobRow) -> float:
    x = row.job
    if not x.HasField("started"):
        return 0.0
    return (seconds(x.ended) if x.HasField("ended") else row.now) - seconds(x.started)


def _eligible(row: JobRow) -> float:
    """When it became eligible; for one that never was (cancelled while held), its submit or begin time."""
    at = eligible_of(row.job)
    if at is not None:
        return at
    return seconds(row.job.begin) if row.job.HasField("begin") else seconds(row.job.submitted)


def _planned(row: JobRow) -> float:
    """sacct's Planned: from eligible to its start (or its end, if it never started)."""
    x = row.job
    until = seconds(x.started) if x.HasField("started") else seconds(x.ended) if x.HasField("ended") else row.now
    return max(0.0, until - _eligible(row))


def _tres(row: JobRow) -> str:
    return f"cpu={row.job.ipus},node={row.node_count},gres/ipu={row.job.ipus}"


def _time(value: float | None) -> str:
    return stamp(value) if value else "Unknown"


def state(row: JobRow) -> str:
    """sacct's State: CANCELLED by UID for a cancelled job whose canceller's uid the controller knows (slurmctld's
    requid; sacct prints plain CANCELLED without one, and so does this)."""
    x = row.job
    known = x.state == "CANCELLED" and x.HasField("cancelled_by_uid")
    return f"{x.state} by {x.cancelled_by_uid}" if known else x.state


def derived_exit_code(row: JobRow) -> str:
    """sacct's DerivedExitCode: the highest exit code of the job's srun steps, the batch step left out (slurmctld's
    derived_ec, src/stepmgr/stepmgr.c), 0:0 for a job that ran none. A job here runs no steps (one allocation, one
    program), so it is 0:0 for each, as sacct shows for a batch script that called no srun; ExitCode is the
    program's."""
    return "0:0"


def _file(name: str):
    """sacct's WorkDir, StdIn, StdOut and StdErr as `vipu show job` says them, output patterns filled in; blank
    where the job has none (a workload that writes no stderr, reads no stdin)."""
    def value(row: JobRow) -> str:
        from vipu.cli.batch_detail import built_in_stdout
        from vipu.cli.job_detail import run_fields, spec_data

        fields = run_fields(row.job)
        if name == "StdOut" and name not in fields:  # a built-in workload's: the file the controller writes
            return built_in_stdout(row.job, spec_data(row.job)).replace("(null)", "")
        return str(fields.get(name, "")).replace("(null)", "")

    return value


def _field(width: int, value, key=None, needs=frozenset()) -> Column:
    return Column("", value, key, needs=needs, width=width)


# sacct's fields (man sacct), in sacct's order of matching a prefix, with its default widths
FIELDS: dict[str, Column] = {
    "Account": _field(10, lambda r: r.job.account),
    "AllocCPUS": _field(10, lambda r: str(r.job.ipus)),
    "AllocNodes": _field(10, lambda r: str(r.node_count if r.job.HasField("started") else 0), needs=FULL | NODES),
    "AllocTRES": _field(10, lambda r: _tres(r) if r.job.HasField("started") else "", needs=FULL | NODES),
    "Comment": _field(14, lambda r: r.job.spec.comment, needs=FULL),
    "CPUTime": _field(10, lambda r: elapsed(_ran(r) * r.job.ipus)),
    "CPUTimeRAW": _field(10, lambda r: str(int(_ran(r) * r.job.ipus))),
    "DerivedExitCode": _field(15, derived_exit_code),
    "Elapsed": _field(10, lambda r: elapsed(_ran(r))),
    "ElapsedRaw": _field(10, lambda r: str(int(_ran(r)))),
    "Eligible": _field(19, lambda r: _time(eligible_of(r.job))),
    "End": _field(19, lambda r: _time(seconds(r.job.ended) if r.job.HasField("ended") else None)),
    "ExitCode": _field(8, lambda r: exit_code(r.job)),
    "IPUs": _field(5, lambda r: str(r.job.ipus)),
    "JobID": _field(-12, lambda r: job_id(r.job)),
    "JobIDRaw": _field(-12, lambda r: str(r.job.id)),
    "JobName": _field(10, lambda r: r.job.name),
    "NCPUS": _field(10, lambda r: str(r.job.ipus)),
    "NNodes": _field(8, lambda r: str(r.node_count), needs=FULL | NODES),
    "NodeList": _field(15, lambda r: r.node_list() or "None assigned", needs=FULL | NODES),
    "Partition": _field(10, lambda r: r.partition, needs=FULL),
    "Planned": _field(10, lambda r: elapsed(_planned(r))),
    "Priority": _field(10, lambda r: f"{r.job.priority:.0f}"),
    "QOS": _field(10, lambda r: r.job.qos),
    "Reason": _field(22, lambda r: reason(r.job, brief=True)),
    "ReqCPUS": _field(8, lambda r: str(r.job.ipus)),
    "ReqNodes": _field(8, lambda r: str(r.machines.count(r.job.ipus)), needs=NODES),
    "ReqTRES": _field(10, _tres, needs=FULL | NODES),
    "Restarts": _field(8, lambda r: str(r.job.requeue_count)),
    "Start": _field(19, lambda r: _time(seconds(r.job.started) if r.job.HasField("started") else None)),
    "State": _field(10, state),
    "StdErr": _field(20, _file("StdErr"), needs=FULL),
    "StdIn": _field(20, _file("StdIn"), needs=FULL),
    "StdOut": _field(20, _file("StdOut"), needs=FULL),
    "Submit": _field(19, lambda r: _time(seconds(r.job.submitted))),
    "SubmitLine": _field(20, lambda r: r.job.spec.submit_line, needs=FULL),
    "Timelimit": _field(10, lambda r: limit(seconds(r.job.time_limit), elapsed)),
    "TimelimitRaw": _field(10, lambda r: limit(seconds(r.job.time_limit), raw_minutes)),
    "UID": _field(6, lambda r: str(r.job.uid) if r.job.HasField("uid") else ""),
    "User": _field(9, lambda r: r.job.user),
    "WorkDir": _field(20, _file("WorkDir"), needs=FULL),
}
_STEP_STATS = ("no job step statistics are gathered here (Slurm's jobacct_gather samples an srun step's processes;"
               " a job here runs no steps)")
# sacct's fields that have no value here, and why: refused by name rather than shown empty
NO_VALUE = {
    **dict.fromkeys(("Reservation", "ReservationId", "ReqReservation"), "no job runs in a reservation here (scontrol"
                    " create reservation has no counterpart; backfill's own reservations are the scheduler's plan)"),
    **dict.fromkeys(("WCKey", "WCKeyID"), "a job here has no workload characterization key (sbatch --wckey has no"
                    " counterpart: group jobs by -A/--account)"),
    **dict.fromkeys(("AveCPU", "AveCPUFreq", "AveDiskRead", "AveDiskWrite", "AvePages", "AveRSS", "AveVMSize",
                     "MaxDiskRead", "MaxDiskWrite", "MaxPages", "MaxRSS", "MaxVMSize", "MinCPU", "TotalCPU",
                     "UserCPU", "SystemCPU", "ConsumedEnergy", "ConsumedEnergyRaw"), _STEP_STATS),
}
TABLE = "JobID,JobName,User,State,ExitCode,Submit,Start,End,Elapsed,IPUs"  # what `vipu history` prints by default
BRIEF = "JobID,State,ExitCode"  # sacct -b
# sacct -l's fields that have a meaning here (man sacct): its memory, disk, energy and step statistics have none
LONG = "JobID,JobIDRaw,JobName,Partition,AllocCPUS,Elapsed,State,ExitCode,ReqTRES,AllocTRES"
UNITS = "KMGTP"


def help_format() -> str:
    """sacct -e: the field names, four to a line, as sacct prints them."""
    names = sorted(FIELDS, key=str.lower)
    return "\n".join("".join(f"{n:<20}" for n in names[i:i + 4]).rstrip() for i in range(0, len(names), 4))


def in_window(row: JobRow, start: float | None, end: float | None) -> bool:
    """sacct's -S/-E: the job was eligible or running at some moment between them (eligible at or before the end,
    not ended before the start), as slurmdbd selects jobs without -s."""
    x = row.job
    ended = seconds(x.ended) if x.HasField("ended") else row.now
    # in whole seconds, as slurmdbd keeps times: `-E now` (a whole second) takes a job eligible within that second
    return (start is None or ended >= start) and (end is None or math.floor(_eligible(row)) <= end)


def eligible(row: JobRow) -> bool:
    """sacct lists a pending job only once it has an EligibleTime (man sacct, --state): not held (sbatch -H), not
    waiting for a dependency, its begin time past."""
    x = row.job
    if x.state != "PENDING":
        return True
    at = eligible_of(x)
    return at is not None and at <= row.now


def moment(text: str | None, flag: str, now: float) -> float | None:
    if text is None:
        return None
    try:
        return parse_slurm_time(text, now)
    except ValueError as e:
        fail("vipu", f"{flag}: {e}; give {FORMS}", BAD_INPUT)


def register(app: typer.Typer) -> None:
    @app.command()
    def history(
        ctx: typer.Context,
        user: list[str] = typer.Option(None, "--user", "-u", help="only these users' jobs (a comma list)"),
        state: list[str] = typer.Option(None, "--state", "-s",
                                        help="only rows in these states: names or codes (CD, F, CA, TO, NF, PR, RQ,"
                                             " R, PD, ...) in a comma list (default: every state, as sacct's)"),
        jobs: list[str] = typer.Option(None, "--jobs", "-j", help="only these jobs: N, N_T or N_[A-B], comma lists"),
        starttime: str = typer.Option(None, "--starttime", "-S",
                                      help="only jobs not ended before this time (running or pending then, or"
                                           " still): " + FORMS),
        endtime: str = typer.Option(None, "--endtime", "-E",
                                    help="only jobs eligible (submitted, or their begin time) at or before this"
                                         " time (with -S and no -E: now)"),
        fmt: str = typer.Option(None, "--format", "-o",
                                help="sacct's fields, e.g. JobID,JobName%20,State,ExitCode,Elapsed,NNodes,AllocTRES"
                                     " (see below); else SACCT_FORMAT"),
        brief: bool = typer.Option(False, "--brief", "-b", help="JobID, State and ExitCode only (sacct -b)"),
        allocations: bool = typer.Option(False, "--allocations", "-X",
                                         help="accepted, as sacct takes it: jobs here have no steps, so every row is"
                                              " an allocation already"),
        parsable: bool = typer.Option(False, "--parsable", "-p", help="fields between and after | (sacct -p)"),
        parsable2: bool = typer.Option(False, "--parsable2", "-P", help="fields between | only (sacct -P)"),
        delimiter: str = typer.Option("|", "--delimiter", help="what -p and -P put between fields"),
        limit: int = typer.Option(0, "--limit", help="only the last N rows: the N most recently ended (0: all)"),
        duplicates: bool = typer.Option(
            False, "--duplicates", "-D",
            help="also each earlier run of a requeued job (after a node failure, a preemption or vipu requeue:"
                 " REQUEUED), a row each with that run's state, start, end, exit code and nodes"),
        json_out: bool = JsonOption,
        no_header: bool = typer.Option(False, "--noheader", "-n", "--no-header", help="omit the header"),
        name: list[str] = typer.Option(None, "--name", help="only jobs of these names (a comma list)"),
        allusers: bool = typer.Option(False, "--allusers", "-a",
                                      help="every user's jobs: what vipu history lists anyway (under --secure, those"
                                           " the caller may see), as sacct -a does for root"),
        long: bool = typer.Option(False, "--long", "-l", help=f"sacct -l's fields that mean something here, {LONG}"),
        allclusters: bool = typer.Option(False, "--allclusters", "-L",
                                         help="accepted: the controller is the one cluster, so its jobs are all"),
        helpformat: bool = typer.Option(False, "--helpformat", "-e", help="list the -o field names and exit"),
        units: str = typer.Option(None, "--units",
                                  help=f"one of {UNITS}: accepted with a warning, as no field here is a size"),
    ):
        """Jobs with submit, start, end, elapsed, state and exit code (sacct), in the order they ended (a job not
        ended: when it entered its state); as sacct's, running and eligible pending jobs too, not held ones.

        Each job once, as its latest run left it: --state matches that run's state, and a requeued
        job back in the queue is listed PENDING. --duplicates: every run of each job, a row each, as it
        ended. ExitCode is code:signal, 0:15 for a run the controller stopped, until its program has
        ended, then what ended it, 0:9 if SIGKILLed after KillWait (--json: exit_code, signal).

        Without -S and -E every job the controller remembers is listed (sacct's default is since
        midnight; here the whole history is small, and --limit keeps the latest). Times are local.

        Fields (-o): JobID (26_3), JobIDRaw, JobName, User, Account, Partition (the V-IPU allocation), QOS,
        State, ExitCode, DerivedExitCode (the highest exit code of srun steps: 0:0, as no job here runs any),
        Reason, Priority, Restarts, Submit, Eligible, Start, End, Elapsed, ElapsedRaw, Planned, Timelimit,
        TimelimitRaw, NCPUS, AllocCPUS and ReqCPUS (IPUs), NNodes, AllocNodes and ReqNodes (IPU-Machines),
        NodeList, AllocTRES and ReqTRES (cpu=IPUs,node=machines,gres/ipu=IPUs), CPUTime and CPUTimeRAW
        (IPU-time), WorkDir, StdIn, StdOut, StdErr (as `vipu show job` gives them), IPUs; any of them may end in
        %WIDTH (%-WIDTH: left-justified), and a prefix of a name will do."""
        cli = ctx.obj
        if helpformat:
            print(help_format())
            return
        if units is not None:
            if units.upper() not in UNITS or len(units) != 1:
                fail("vipu", f"--units {units!r}: give one of {', '.join(UNITS)}", BAD_INPUT)
            warn("vipu", "--units changes nothing here: no field of vipu history is a size (memory, disk)")
        if long and (fmt is not None or brief):
            fail("vipu", f"-l/--long and {'-o/--format' if fmt is not None else '-b/--brief'} both given; -l is"
                 f" -o {LONG}: give one of them", BAD_INPUT)
        if long:
            fmt = LONG
        if limit < 0:
            fail("vipu", f"--limit is {limit}; give 0 for every job or N > 0 for the last N", BAD_INPUT)
        if parsable and parsable2:
            fail("vipu", "-p/--parsable and -P/--parsable2 both given; give one of them", BAD_INPUT)
        now = time.time()
        since, until = moment(starttime, "-S/--starttime", now), moment(endtime, "-E/--endtime", now)
        if since is not None and since > (now if until is None else until):  # no -E: now, as sacct's
            end = f"-E/--endtime {endtime!r}" if until is not None else "now (no -E/--endtime given)"
            fail("vipu", f"-S/--starttime {starttime!r} is after {end}; give the earlier time to -S", BAD_INPUT)
        states = job_states(state, "-s/--state")
        ids = job_ids(jobs, "-j/--jobs")
        names = set(given(name, "--name", "job names (e.g. --name train,eval)"))
        chosen = fmt if fmt is not None else (BRIEF if brief else None) or os.environ.get("SACCT_FORMAT") or (
            TABLE if parsable or parsable2 else None)  # -o '' is refused, not read as the default
        flag = "-o/--format" if fmt is not None else "SACCT_FORMAT"
        fields = sacct_fields(chosen, FIELDS, flag, NO_VALUE) if chosen is not None else None
        needs = frozenset().union(*(f.column.needs for f in fields)) if fields else frozenset()
        as_json = cli.wants_json(json_out)
        windowed = since is not None or until is not None
        states = states or set(JobState)  # sacct: jobs in any state, running and pending ones too
        request = j.HistoryRequest(users=selected_users(user), states=sorted(s.value for s in states),
                                   ids=ids.asked if ids else [], limit=0 if windowed else limit,
                                   brief=not as_json and "full" not in needs, duplicates=duplicates)
        if since is not None:  # the controller leaves out what ended before: its history may hold years of jobs
            request.ended_since.FromNanoseconds(int(since * 1e9))
        listed = cli.conn.every_page(cli.conn.jobs.History, request).jobs
        machines = Machines.fetch(cli.conn, blocks_of(listed)) if "nodes" in needs else None
        rows = [JobRow(x, now, machines) for x in listed if ids is None or x in ids]
        rows = [r for r in rows if in_window(r, since, until) and eligible(r) and (not names or r.job.name in names)]
        if windowed and limit:
            rows = rows[-limit:]
        header = cli.with_header(no_header)
        if as_json:
            print_json([job_data(r.job) for r in rows])  # each row shaped as `vipu show job --json`
            return
        if fields is None:
            cells = [[FIELDS[n].value(r) for n in TABLE.split(",")] for r in rows]
            lines = table(TABLE.split(","), cells, header).splitlines()
        else:
            lines = sacct_render(fields, rows, header, "-p" if parsable else "-P" if parsable2 else "", delimiter)
        if lines:
            print("\n".join(lines))
