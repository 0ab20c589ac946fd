"""`vipu queue`: squeue's options, read as squeue reads them (man squeue), over the controller's queue."""

from __future__ import annotations

import os
import string
import time
from typing import TYPE_CHECKING, NamedTuple

from vipu.cli.failure import BAD_INPUT, NOT_FOUND, fail, warn
from vipu.cli.slurm_time import clock
from vipu.cli.job_selection import JobIds, active_and_ended, job_ids, job_states, selected_users, split
from vipu.cli.output import table
from vipu.cli.queue_rows import JobRow
from vipu.client.messages import seconds
from vipu.scheduler.job_states import ACTIVE, JobState
from vipu.v1 import job_pb2 as j

if TYPE_CHECKING:
    from vipu.cli.nodes import Machines
    from vipu.cli.queue_narrowing import Narrowing
    from vipu.cli.slurm_format import Column, Layout

# Imported where used, not here: the -o/-O/-S fields (queue_fields.py, slurm_format.py), the IPU-Machines
# (nodes.py) and --json's modules. The default table needs none of them, and Slurm users run squeue in loops.

MIN_JOB_AGE = 300  # Slurm's MinJobAge default: squeue lists a job that ended for this long after (-t CD, -t all)


class Query(NamedTuple):
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
    me: bool = False  # --me: the controller adds the caller, as it knows it (under --secure, the key's owner)
    lone: int | None = None  # the job of a -j naming one job, which squeue looks up on its own (Invalid job id)
    narrow: Narrowing | None = None  # -n -p -q -A -w

    @property
    def needs(self) -> frozenset[str]:
        if self.as_json:
            return frozenset({"full", "nodes"})
        wanted = self.layout.needs if self.layout else frozenset()
        if self.narrow is not None:
            wanted = wanted | self.narrow.needs
        return wanted.union(*(c.needs for c, _ in self.keys))


def layout_of(fmt: str | None, names: str | None, long: bool, start: bool) -> Layout | None:
    if fmt is None and names is None and not long and not start and not any(
            os.environ.get(v) for v in ("SQUEUE_FORMAT", "SQUEUE_FORMAT2")):
        return None  # the table `vipu queue` has always printed
    from vipu.cli.queue_fields import LETTERS, LONG, NAMES, START
    from vipu.cli.slurm_format import named_layout, percent_layout

    if fmt is None and not (names or long) and (os.environ.get("SQUEUE_FORMAT") or "").lower() == "%all":
        fmt = "%all"
    if fmt is not None and fmt.lower() == "%all":  # every field, a | between, letters a-z then A-Z (squeue's opts.c)
        fmt = "|".join(f"%{c}" for c in string.ascii_lowercase + string.ascii_uppercase if c in LETTERS)

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


def listing(cli, q: Query, now: float, unknown: set[str] | None = None) -> list[JobRow]:
    """The rows to show; `unknown`, if given (not in the later listings of -i), gets the users named that the
    controller knows nothing of, and the jobs -j names that ended are said (say_ended)."""
    conn, brief, placed = cli.conn, "full" not in q.needs, "placed" in q.needs
    asked = q.ids.asked if q.ids else []
    jobs = []
    replies = []
    if q.active is not None:
        request = j.ListJobsRequest(users=q.users, me=q.me, states=q.active, ids=asked, brief=brief,
                                    placement=brief and placed)
        replies.append(conn.every_page(conn.jobs.ListJobs, request))
        jobs += replies[-1].jobs
    if q.ended:
        request = j.HistoryRequest(users=q.users, me=q.me, states=q.ended, ids=asked, brief=brief and not placed)
        replies.append(conn.every_page(conn.jobs.History, request))
        completing = still_completing(conn, q, jobs, asked)
        jobs += [x for x in replies[-1].jobs if seconds(x.ended) >= now - MIN_JOB_AGE and x.id not in completing]
    if unknown is not None and replies:
        unknown.update(replies[0].unknown_users)
    if q.ids is not None:
        jobs = [x for x in jobs if x in q.ids]
    if q.lone is not None and not jobs and not kept(cli, q.lone, now):
        fail("vipu", f"-j/--jobs: job {q.lone} is not in the queue (squeue: Invalid job id specified): it ended over"
             f" {MIN_JOB_AGE} s ago or never was; vipu history -j {q.lone} lists ended jobs", NOT_FOUND)
    if q.ids is not None and q.active == [] and not q.ended and not q.as_json and unknown is not None:
        say_ended(cli, q, jobs, now)
    machines = None
    if "nodes" in q.needs:
        from vipu.cli.nodes import Machines, blocks_of

        machines = Machines.fetch(conn, blocks_of(jobs))  # only the nodes its jobs run on
    if q.narrow is not None:
        jobs = [x for x in jobs if q.narrow.keeps(JobRow(x, now, machines))]
    rows = combined(jobs, now, machines, q.expand or q.as_json)
    if not q.keys:
        return rows
    from vipu.cli.slurm_format import sort_rows

    return sort_rows(rows, q.keys)


def still_completing(conn, q: Query, listed: list, asked: list[str]) -> set[int]:
    """The ids of the jobs whose run ended but is still torn down (COMPLETING). Why: squeue lists such a job only as
    CG, never under the state it ended in (CA, TO, F, ...), which the history gives: Slurm keeps COMPLETING as a flag
    over that base state, and its -t matches a base state only if the job's whole state word is that state, flags
    included, a flag by the flag alone (src/squeue/print.c, _filter_job). `listed`: the queue's jobs, if asked for
    every active state or CG; else the queue is asked for its CG jobs alone."""
    if q.active is not None and (not q.active or JobState.COMPLETING.value in q.active):
        return {x.id for x in listed if x.state == JobState.COMPLETING.value}
    request = j.ListJobsRequest(users=q.users, me=q.me, states=[JobState.COMPLETING.value], ids=asked, brief=True)
    return {x.id for x in conn.every_page(conn.jobs.ListJobs, request).jobs}


def kept(cli, job: int, now: float) -> bool:
    """Whether squeue would find the job: active, or ended within MinJobAge (Slurm then purges it, and squeue -j of
    that one job fails with "Invalid job id specified"; of several, it lists those it finds)."""
    x = cli.conn.lookup(cli.conn.jobs.GetJob, j.GetJobRequest(id=job))  # another user's job: refused as theirs
    return x is not None and (JobState(x.state) in ACTIVE or seconds(x.ended) >= now - MIN_JOB_AGE)


SAID_ENDED = 5  # jobs named by -j that ended, said one by one; past that, how many more


def say_ended(cli, q: Query, listed: list, now: float) -> None:
    """A line on stderr for each job -j names that ended, which squeue's default states leave out of the listing
    (stdout stays squeue's, so `squeue -h -j ID | wc -l` still tells a script the job is gone): its final state,
    and how to see it."""
    from vipu.cli.queue_rows import job_id

    found = {x.id for x in listed} | {x.array_job_id for x in listed if x.HasField("array_job_id")}
    missing = [i for i in q.ids.asked if i not in found]  # type: ignore[union-attr]
    if not missing:
        return
    request = j.HistoryRequest(users=q.users, me=q.me, ids=missing, brief=True)
    ended = [x for x in cli.conn.every_page(cli.conn.jobs.History, request).jobs if x in q.ids]
    for x in ended[:SAID_ENDED]:
        name, ago = job_id(x), now - seconds(x.ended)
        where = f"vipu queue -j {name} -t all lists it for {MIN_JOB_AGE} s after its end, " if ago < MIN_JOB_AGE else ""
        warn("vipu", f"job {name} ended {x.state} {clock(ago)} ago, so the queue's default states (PD, R, CG) leave"
             f" it out, as squeue's do; {where}vipu history -j {name} after that")
    if len(ended) > SAID_ENDED:
        warn("vipu", f"and {len(ended) - SAID_ENDED} more of the jobs named ended: vipu history -j lists them all")


def said(users: list[str], unknown: set[str], flag: str = "-u/--user") -> None:
    """squeue's error line for each user named that the controller knows nothing of, once; like squeue's, it does
    not end the command."""
    for nobody in [u for u in users if u in unknown]:
        warn("vipu", f"{flag}: no user {nobody!r} is known to the controller (squeue: Invalid user: {nobody});"
             " check the name")


def show(cli, q: Query, warnings: list[str], unknown: set[str] | None = None) -> list[JobRow]:
    now = time.time()
    rows = listing(cli, q, now, unknown)
    if q.as_json:
        from vipu.cli.output import print_json
        from vipu.cli.queue_json import document
        from vipu.v1 import partition_pb2 as p

        pod = cli.conn.call(cli.conn.partitions.GetVersion, p.GetVersionRequest()).pod
        print_json(document(rows, now, cli.conn.settings.user, pod, warnings), ordered=True)
        return rows
    if q.layout is not None:
        from vipu.cli.slurm_format import render

        lines = render(q.layout, rows, q.header)
    else:
        cells = [[r.id_text, r.job.name, r.job.user, r.job.state_code, clock(r.used), r.job.ipus,
                  r.job.partition or f"({r.job.reason or 'None'})"] for r in rows]
        text = table(["JOBID", "NAME", "USER", "ST", "TIME", "IPUS", "PARTITION(REASON)"], cells, q.header)
        lines = text.splitlines()
    if q.dated and q.header:
        print(time.ctime(now))  # squeue's time stamp above the header
    if lines:  # nothing at all for an empty queue without a header: `| wc -l` counts 0
        print("\n".join(lines))
    return rows


def queue_jobs(cli, user: list[str] | None = None, me: bool = False, state: list[str] | None = None,
               jobs: list[str] | None = None, array: bool = False, fmt: str | None = None, names: str | None = None,
               long: bool = False, sort: str | None = None, start: bool = False, iterate: int | None = None,
               json_out: bool = False, no_header: bool = False, name: list[str] | None = None,
               partition: list[str] | None = None, qos: list[str] | None = None, account: list[str] | None = None,
               nodelist: list[str] | None = None) -> None:
    """`vipu queue` once its flags are read (queue_command.py with typer, or fast_path.py), the defaults typer's."""
    from vipu.cli.queue_narrowing import narrowing

    as_json = cli.wants_json(json_out)
    states_flag = "-t/--states"
    if not state and os.environ.get("SQUEUE_STATES"):  # squeue's input variables: a flag wins over them
        state, states_flag = [os.environ["SQUEUE_STATES"]], "SQUEUE_STATES"
    who = "-u/--user"
    if not user and not me and os.environ.get("SQUEUE_USERS"):
        user, who = [os.environ["SQUEUE_USERS"]], "SQUEUE_USERS"
    array = array or bool(os.environ.get("SQUEUE_ARRAY"))
    narrow = narrowing(name, partition, qos, account, nodelist)
    states = job_states(state, states_flag)
    if states is None and start:
        states = {JobState.PENDING}
    active, ended = active_and_ended(states)
    layout = layout_of(fmt, names, long, start)
    spec = sort if sort is not None else os.environ.get("SQUEUE_SORT") or ("S" if start else None)
    keys = []
    if spec is not None:
        from vipu.cli.queue_fields import LETTERS
        from vipu.cli.slurm_format import sort_keys

        keys = sort_keys(spec, LETTERS, "-S/--sort" if sort is not None else "SQUEUE_SORT")
    users = selected_users(user)
    ids = job_ids(jobs, "-j/--jobs")
    lone = ids.asked[0] if ids is not None and len(split(jobs)) == 1 and len(ids.asked) == 1 else None
    query = Query(users, active, ended, ids, layout, keys, array, as_json, cli.with_header(no_header),
                  dated=bool(iterate) or long, me=me, lone=lone, narrow=narrow if any(narrow) else None)
    warnings = [f"{flag} is ignored with --json, as squeue ignores it" for flag, given in
                (("-o/--format", fmt), ("-O/--Format", names), ("-S/--sort", sort)) if given] if as_json else []
    unknown: set[str] = set()
    if not iterate:
        show(cli, query, warnings, unknown)
        said(users, unknown, who)
        return
    try:
        show(cli, query, warnings, unknown)
        said(users, unknown, who)
        while True:
            print(flush=True)  # squeue's blank line between listings
            time.sleep(iterate)
            show(cli, query, warnings)
    except KeyboardInterrupt:  # how -i ends: Ctrl-C, exit 0
        from vipu.cli.fast_path import leave

        # at once, as the fast path ends: under load a `vipu queue -i` was still alive 30 s after its Ctrl-C, and
        # the interpreter's teardown (gRPC's threads with it) is all that is left after the loop
        leave(0)
