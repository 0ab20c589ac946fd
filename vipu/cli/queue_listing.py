"""`vipu queue`: squeue's options, read as squeue reads them (man squeue), over the controller's queue."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import typer

from vipu.cli.context import JsonOption, ShortNoHeaderOption
from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_detail import clock
from vipu.cli.job_selection import JobIds, active_and_ended, job_ids, job_states, split
from vipu.cli.nodes import Machines
from vipu.cli.output import print_json, table
from vipu.cli.queue_fields import LETTERS, LONG, NAMES, START, JobRow, labelled
from vipu.cli.queue_json import document
from vipu.cli.slurm_format import Column, Layout, named_layout, percent_layout, render, sort_keys, sort_rows
from vipu.client.messages import seconds
from vipu.scheduler.job_states import JobState
from vipu.v1 import job_pb2 as j
from vipu.v1 import partition_pb2 as p

MIN_JOB_AGE = 300  # Slurm's MinJobAge default: squeue lists a job that ended for this long after (-t CD, -t all)


@dataclass(frozen=True)
class Query:
    """What to list and how, read from the flags before anything is asked of the controller."""

    users: list[str]
    active: list[str] | None  # the queue's states to list (None: none of them; []: all)
    ended: list[str]  # ended states to list, from the last MIN_JOB_AGE seconds
    ids: JobIds | None
    layout: Layout | None  # None: the table `vipu queue` has always printed
    keys: list[tuple[Column, bool]]
    expand: bool  # a line each for pending array tasks
    as_json: bool
    header: bool
    dated: bool  # a time stamp above each listing (-i, -l), as squeue prints one

    @property
    def needs(self) -> frozenset[str]:
        if self.as_json:
            return frozenset({"full", "nodes"})
        wanted = self.layout.needs if self.layout else frozenset()
        return wanted.union(*(c.needs for c, _ in self.keys))


def layout_of(fmt: str | None, names: str | None, long: bool, start: bool) -> Layout | None:
    if fmt is not None and names is not None:
        fail("vipu", "-o/--format and -O/--Format both given; give one of them", BAD_INPUT)
    if long and (fmt is not None or names is not None):
        fail("vipu", "-l/--long and a format both given; -l is the format " + repr(LONG) + ": give one of them",
             BAD_INPUT)
    if fmt is not None:
        return percent_layout(fmt, LETTERS, "-o/--format")
    if names is not None:
        return named_layout(names, NAMES, "-O/--Format")
    if long:
        return percent_layout(LONG, LETTERS, "-l/--long")
    for variable, read in (("SQUEUE_FORMAT", percent_layout), ("SQUEUE_FORMAT2", named_layout)):
        if os.environ.get(variable):
            return read(os.environ[variable], NAMES if variable.endswith("2") else LETTERS, variable)
    return percent_layout(START, LETTERS, "--start") if start else None


def combined(jobs, now: float, machines: Machines | None, expand: bool) -> list[JobRow]:
    """A row a job, but pending tasks of an array next to each other that wait alike share one (26_[1-3]), as
    squeue shows them unless -r."""
    rows: list[JobRow] = []
    last = None  # what the last row's pending array tasks share
    for x in jobs:
        key = (x.array_job_id, x.name, x.user, x.ipus, x.reason) if x.HasField("array_job_id") and \
            x.state_code == "PD" else None
        if not expand and key is not None and key == last:
            rows[-1].tasks.append(x.array_task_id)  # type: ignore[union-attr]
            continue
        last = key
        rows.append(JobRow(x, now, machines, [x.array_task_id] if key is not None else None))
    return rows


def listing(cli, q: Query, now: float) -> list[JobRow]:
    conn, brief = cli.conn, "full" not in q.needs
    asked = q.ids.asked if q.ids else []
    jobs = []
    if q.active is not None:
        request = j.ListJobsRequest(users=q.users, states=q.active, ids=asked, brief=brief)
        jobs += conn.every_page(conn.jobs.ListJobs, request).jobs
    if q.ended:
        request = j.HistoryRequest(users=q.users, states=q.ended, ids=asked, brief=brief)
        jobs += [x for x in conn.every_page(conn.jobs.History, request).jobs if seconds(x.ended) >= now - MIN_JOB_AGE]
    if q.ids is not None:
        jobs = [x for x in jobs if x in q.ids]
    machines = Machines.fetch(conn) if "nodes" in q.needs else None
    rows = combined(jobs, now, machines, q.expand or q.as_json)
    return sort_rows(rows, q.keys) if q.keys else rows


def show(cli, q: Query, warnings: list[str]) -> None:
    now = time.time()
    rows = listing(cli, q, now)
    if q.as_json:
        pod = cli.conn.call(cli.conn.partitions.GetVersion, p.GetVersionRequest()).pod
        print_json(document(rows, now, cli.conn.settings.user, pod, warnings), ordered=True)
        return
    if q.layout is not None:
        lines = render(q.layout, rows, q.header)
    else:
        cells = [[r.id_text, labelled(r.job), r.job.user, r.job.state_code, clock(r.used), r.job.ipus,
                  r.job.partition or f"({r.job.reason or 'None'})"] for r in rows]
        text = table(["JOBID", "NAME", "USER", "ST", "TIME", "IPUS", "PARTITION(REASON)"], cells, q.header)
        lines = text.splitlines()
    if q.dated and q.header:
        print(time.ctime(now))  # squeue's time stamp above the header
    if lines:  # nothing at all for an empty queue without a header: `| wc -l` counts 0
        print("\n".join(lines))


def register(app: typer.Typer) -> None:
    @app.command()
    def queue(
        ctx: typer.Context,
        user: list[str] = typer.Option(None, "--user", "-u", "--users",
                                       help="only these users' jobs (a comma list, or the flag again)"),
        me: bool = typer.Option(False, "--me", help="only your own jobs (the user the CLI calls as)"),
        state: list[str] = typer.Option(
            None, "--states", "-t", "--state",
            help="only these states: names or codes (PD, R, CD, ...) in a comma list, or all; an ended state lists"
                 f" jobs that ended in the last {MIN_JOB_AGE} s, as squeue does (Slurm's MinJobAge)"),
        jobs: list[str] = typer.Option(None, "--jobs", "-j", help="only these jobs: N, N_T or N_[A-B], comma lists"),
        array: bool = typer.Option(False, "--array", "-r",
                                   help="a line for each pending array task (default: one line for a run of them)"),
        fmt: str = typer.Option(None, "--format", "-o",
                                help="squeue's %-format, e.g. '%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R' (see below);"
                                     " else SQUEUE_FORMAT"),
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
    ):
        """Pending and running jobs (squeue), running first, then pending in priority order; pending tasks of an
        array that wait for the same reason share a line, 26_[10-99] (with --json, or -r, a line each).

        Formats (-o, -l, --start, SQUEUE_FORMAT): %i job id (26_3), %A job id (unique), %F array job id, %K array
        task id, %j name, %u user, %a account, %q QOS, %t and %T state, %r reason, %R reason or nodes, %M time
        used, %l time limit, %L time left, %S start (expected, for a pending job), %V submit, %e end, %Q and %p
        priority, %y nice, %E dependency, %C IPUs (Slurm's CPUs), %D IPU-Machines (Slurm's nodes), %N their
        names, %B the first, %b IPUs per machine (gres/ipu:N), %P the V-IPU allocation (Slurm's partition), %Y
        (null); %.Nx right-justifies in N characters, %Nx and %-Nx left-justify, and both cut a longer value.

        -O names (the same fields, as man squeue names them): JobID, JobArrayID, ArrayJobID, ArrayTaskID, Name,
        UserName, Account, QOS, State, StateCompact, Reason, ReasonList, TimeUsed, TimeLimit, TimeLeft,
        StartTime, SubmitTime, EndTime, Priority, PriorityLong, Nice, Dependency, NumCPUs, IPUs (vipu's own),
        NumNodes, NodeList, BatchHost, tres-per-node, Partition, SchedNodes.

        --json: squeue --json's shape: {"jobs": [...], "meta": {...}, "errors": [], "warnings": []}, each job with
        Slurm's field names and typed values, plus ipus, vipu_partition, modelled and time_limit_s."""
        cli = ctx.obj
        as_json = cli.wants_json(json_out)
        states = job_states(state, "-t/--states")
        if states is None and start:
            states = {JobState.PENDING}
        active, ended = active_and_ended(states)
        layout = layout_of(fmt, names, long, start)
        spec = sort if sort is not None else os.environ.get("SQUEUE_SORT") or ("S" if start else None)
        keys = sort_keys(spec, LETTERS, "-S/--sort" if sort is not None else "SQUEUE_SORT") if spec is not None \
            else []
        users = split(user) + ([cli.conn.settings.user] if me else [])
        query = Query(users, active, ended, job_ids(jobs, "-j/--jobs"), layout, keys, array, as_json,
                      cli.with_header(no_header), dated=bool(iterate) or long)
        warnings = [f"{flag} is ignored with --json, as squeue ignores it" for flag, given in
                    (("-o/--format", fmt), ("-O/--Format", names), ("-S/--sort", sort)) if given] if as_json else []
        if not iterate:
            show(cli, query, warnings)
            return
        try:
            while True:
                show(cli, query, warnings)
                print(flush=True)  # squeue's blank line between listings
                time.sleep(iterate)
        except KeyboardInterrupt:  # how -i ends: Ctrl-C, exit 0
            sys.stdout.flush()
