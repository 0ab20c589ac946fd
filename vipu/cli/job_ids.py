"""Job ids as users write them, N, N_T (task T of array job N) or N_[A-B,C] (those tasks of array job N) as
squeue prints them, and what scancel and scontrol do with several: act on each id that can be acted on and report
each that cannot."""

from __future__ import annotations

import re

from vipu.cli.failure import (
    BAD_INPUT,
    CONFLICT,
    DENIED,
    ERROR,
    NO_CAPACITY,
    NOT_FOUND,
    OK,
    UNREACHABLE,
    error,
    fail,
)
from vipu.cli.job_selection import split
from vipu.cli.output import print_json, print_rows
from vipu.cli.queue_rows import job_id
from vipu.scheduler.arrays import ArraySyntaxError, TooManyTasks, parse_array, spans
from vipu.v1 import job_pb2 as j


def in_array(x: j.Job, array: int) -> bool:
    return x.HasField("array_job_id") and x.array_job_id == array


# Exactly N or N_T, parsed by hand: int() accepts underscores, so it read 26_50 as job 2650 and 1_2_6 as job 126.
JOB_ID = re.compile(r"([0-9]{1,19})(?:_([0-9]{1,19}))?")  # 19 digits: int() refuses thousands
MAX_ID = 2**63 - 1  # job ids are int64 on the wire
ID_FORMS = "give N (a job, or all tasks of array job N) or N_T (task T of array job N), e.g. 26 or 26_50"
IDS = {"ignore_unknown_options": True}  # so `-3` reaches the job id check and its one line, not click's usage box


# N_[A-B,C,...]: tasks of array job N as squeue prints pending ones (scancel and scontrol take it too; a %N
# suffix, which only sbatch --array takes, is refused)
TASK_RANGE = re.compile(r"([0-9]{1,19})_\[([^\]]*)\]")
RANGE_FORM = "write tasks as N_[A-B,C] or N_[A-B:STEP], e.g. 26_[1-3,7] or 26_[0-90:10]"
LIMIT = " (a %N limit is for `vipu submit --array`)"


def parse_id(text: str) -> tuple[int, int | None]:
    """(job, task) from N or N_T; anything else is refused (N_[A-B,C] only where several ids are taken: act())."""
    match = JOB_ID.fullmatch(text)
    if not match and TASK_RANGE.fullmatch(text):
        array, tasks = parse_range(text)
        fail("vipu", f"job id {text!r} names {len(tasks)} tasks, and here a job id is N or N_T: give the tasks one"
             f" by one, e.g. {array}_{tasks[0]}", BAD_INPUT)
    if not match or any(g is not None and int(g) > MAX_ID for g in match.groups()):
        fail("vipu", f"job id {text!r} is not a job id; {ID_FORMS}", BAD_INPUT)
    job, task = match.groups()
    return int(job), None if task is None else int(task)


def parse_range(text: str) -> tuple[int, list[int]]:
    """(array job, its tasks sorted, each once) from N_[A-B,C,...], read as `--array` is (parse_array, bounded before
    anything is expanded: N_[0-999999999] is refused at once) but for a %N limit, which names no tasks."""
    array, body = TASK_RANGE.fullmatch(text).groups()  # type: ignore[union-attr]
    if int(array) > MAX_ID:
        fail("vipu", f"job id {text!r} is not a job id; {RANGE_FORM}", BAD_INPUT)
    if not body.strip():
        fail("vipu", f"job id {text!r} names no tasks; {RANGE_FORM}", BAD_INPUT)
    if "%" in body:
        fail("vipu", f"job id {text!r} is not a job id{LIMIT}; {RANGE_FORM}", BAD_INPUT)
    try:
        tasks = parse_array(body)
    except TooManyTasks as e:
        fail("vipu", f"job id {text!r} {e.problem}, more than an array has; give the tasks it has (`vipu queue`"
             " lists them)", BAD_INPUT)
    except ArraySyntaxError as e:
        fail("vipu", f"job id {text!r}: {e.problem}; {e.fix}", BAD_INPUT)
    return int(array), list(tasks.indices)


def id_words(texts: list[str]) -> list[str]:
    """Each word split as scontrol splits a job_list (and scancel its ids): `7,22` is jobs 7 and 22, the comma in
    N_[1,3] does not split. A word with no id at all stays, so that check() names it."""
    out = []
    for text in texts:
        out += split([text]) or [text]
    return out


def check(text: str) -> None:
    """Refuse, with one line, an id that is neither N, N_T nor N_[A-B,C]."""
    if TASK_RANGE.fullmatch(text):
        parse_range(text)
    elif "[" in text or "]" in text:
        limit = LIMIT if TASK_RANGE.match(text) else ""
        fail("vipu", f"job id {text!r} is not a job id{limit}; {RANGE_FORM}", BAD_INPUT)
    else:
        parse_id(text)


class TaskIds:
    """The job ids of array tasks, asked of the controller once per array however many of its tasks are named
    (N_[0-4999] names 5,000). ListJobs lists an array's active tasks; an ended task is known only to History, so
    it is asked only when a task is not active, and once per array."""

    def __init__(self, cli):
        self.cli = cli
        self.arrays: dict[int, dict[int, int]] = {}  # array -> task -> job id
        self.ended: set[int] = set()  # arrays whose ended tasks are in self.arrays
        self.ranged: dict[tuple[int, bool], int] = {}  # (job id, single) an N_[A-B,C] named -> its array N

    def tasks(self, array: int, wanted: list[int] | None = None) -> dict[int, int]:
        """Task -> job id of every task of `array` known, the ended ones too if one of `wanted` is not active
        (wanted None: every task, ended or not)."""
        jobs = self.cli.conn.jobs
        if array not in self.arrays:
            listed = self.cli.conn.every_page(jobs.ListJobs, j.ListJobsRequest(ids=[array], brief=True)).jobs
            self.arrays[array] = {x.array_task_id: x.id for x in listed if in_array(x, array)}
        known = self.arrays[array]
        if array not in self.ended and (wanted is None or any(task not in known for task in wanted)):
            self.ended.add(array)
            ended = self.cli.conn.every_page(jobs.History, j.HistoryRequest(ids=[array], brief=True)).jobs
            known.update((x.array_task_id, x.id) for x in ended if in_array(x, array))
        return known

    def resolve_range(self, text: str) -> tuple[list[int], int]:
        """The job ids of the tasks N_[A-B,C] names that exist, and NOT_FOUND after one line naming those that do
        not (OK if none)."""
        array, wanted = parse_range(text)
        tasks = self.tasks(array, wanted)
        missing = [task for task in wanted if task not in tasks]
        if not missing:
            return [tasks[task] for task in wanted], OK
        if not tasks:  # no such job, or not an array: said as for N_T
            self.resolve(f"{array}_{missing[0]}", shown=text)
        error("vipu", f"job id {text!r}: array job {array} has no task{'' if len(missing) == 1 else 's'}"
              f" {spans(missing)}; `vipu queue` and `vipu history` list its tasks")
        return [tasks[task] for task in wanted if task in tasks], NOT_FOUND

    def resolve_all(self, texts: list[str]) -> tuple[list[tuple[int, bool]], int]:
        """(job id, single) for each job and task the ids name, each once, in order, and the gravest failure's exit
        code (OK if none) after a line for each id that names nothing. N is a job or every task of array job N; N_T
        is one task, `single` (the first task's job id is the array's own), and N_[A-B,C] each of those tasks. One
        malformed id and nothing is asked of the controller, after a line for each malformed one."""
        texts = id_words(texts)
        malformed = False
        for text in texts:
            try:
                check(text)
            except SystemExit:  # check printed the line naming the id: on to the next, so all are named at once
                malformed = True
        if malformed:
            raise SystemExit(BAD_INPUT)
        targets: dict[tuple[int, bool], None] = {}
        failed = OK
        for text in texts:
            try:
                if TASK_RANGE.fullmatch(text):
                    found, code = self.resolve_range(text)
                    failed = graver(failed, code)
                    targets.update(dict.fromkeys((job, True) for job in found))
                    self.ranged.update(dict.fromkeys(((job, True) for job in found), int(text.partition("_")[0])))
                else:
                    targets[(self.resolve(text), not text.isdigit())] = None
            except SystemExit as e:  # resolve printed the line naming the id: on to the next
                if e.code == UNREACHABLE:  # every other id would wait as long and fail alike
                    raise
                failed = graver(failed, e.code)
        return list(targets), failed

    def resolve(self, text: str, shown: str | None = None) -> int:
        """The job id that N or N_T names; `shown`: the id as the user wrote it, for the messages."""
        array, task = parse_id(text)
        shown = shown or text
        if task is None:
            return array
        tasks = self.tasks(array, [task])
        if task in tasks:
            return tasks[task]
        if tasks:
            fail("vipu", f"job id {shown!r}: array job {array} has no task {task}; `vipu queue` and `vipu history`"
                 " list its tasks", NOT_FOUND)
        head = self.cli.conn.call(self.cli.conn.jobs.GetJob, j.GetJobRequest(id=array))  # NOT_FOUND if none
        what = f"it is task {job_id(head)}" if head.HasField("array_job_id") else "it is a single job"
        fail("vipu", f"job id {shown!r}: job {array} is not an array job ({what}); {ID_FORMS}", BAD_INPUT)


def resolve_id(cli, text: str) -> int:
    """The job id that N or N_T names."""
    return TaskIds(cli).resolve(text)


# Several ids failing for different reasons: the exit code is the gravest failure, in this order, whatever the
# order of the ids. Not found outranks conflict: `vipu cancel 25 999` with 25 ended and 999 a typo exits 3, so a
# script can tell a mistyped id from a job that had simply ended already (4, when that is the only failure).
GRAVEST_FIRST = (ERROR, BAD_INPUT, DENIED, NOT_FOUND, CONFLICT, NO_CAPACITY, UNREACHABLE)


def graver(code: int, other: int) -> int:
    """The graver of two exit codes (OK is no failure)."""
    ranked = [c for c in (code, other) if c != OK]
    return min(ranked, key=GRAVEST_FIRST.index, default=OK)


def held(x: j.Job) -> str:
    """A hold matters only while the job waits: a cancelled job that was held is just CANCELLED."""
    return (" (held by an admin)" if x.admin_hold else " (held)") if x.held and x.state == "PENDING" else ""


MANY = 20  # more changed jobs than this: one line with their number instead of a line each
IDS_HELP = ("job ids: N (an array job: all its tasks), N_T (task T of array job N) or N_[A-B,C] (those tasks, as"
            " vipu queue prints them), space- or comma-separated (7,22). A malformed id: an error line for each and"
            " nothing is done (exit 2). Else each id is acted on if it can be and each that cannot gets an error line;"
            " the exit code is 0 if none failed, else the gravest failure: 2 (bad id), 6 (denied), 3 (not found), then"
            " 4 (ended, or in the wrong state)")
PRIORITY_IDS_HELP = ("only these jobs: N (an array job: its pending tasks), N_T (task T of array job N) or N_[A-B,C]"
                     " (those tasks, as vipu queue prints them). Each id that names no pending job gets an error"
                     " line and the exit code of the gravest failure, as for vipu cancel; the others are shown")


def lines(jobs, verb: str) -> list[str]:
    if len(jobs) > MANY:
        return [f"{len(jobs)} jobs {verb}"]
    return [f"Job {job_id(x)} {verb}: {x.state}{held(x)}" for x in jobs]


def active(cli, ids: list[int]) -> dict[int, j.Job]:
    """The active jobs and array tasks these ids name, by job id (none for no ids: ListJobs would list all)."""
    if not ids:
        return {}
    return {x.id: x for x in cli.conn.every_page(cli.conn.jobs.ListJobs, j.ListJobsRequest(ids=ids, brief=True)).jobs}


def array_changes(cli, array: int, before: dict[int, j.Job], cancelled: bool) -> list[j.Job]:
    """The tasks of `array` a command changed, from the queue before and after it: its reply names only the
    array's first task. A task that left the queue during a cancel was cancelled."""
    old = {i: x for i, x in before.items() if in_array(x, array)}
    new = {i: x for i, x in active(cli, [array]).items() if in_array(x, array)}

    def look(x: j.Job | None):
        return x and (x.state, x.held, x.admin_hold)

    changed = []
    for i in sorted(old.keys() | new.keys()):
        x = new.get(i)
        if x is None and cancelled:
            x = j.Job()
            x.CopyFrom(old[i])
            x.state = "CANCELLED"
        if x is not None and look(x) != look(old.get(i)):
            changed.append(x)
    return changed


def act(cli, rpc: str, verb: str, texts: list[str], as_json: bool, request=j.JobIdsRequest,
        **fields) -> tuple[list[j.Job], int]:
    """What scancel and scontrol do with several ids: act on each id that can be acted on, print a line for each
    success and one error line for each failure; returns the jobs changed and the gravest failure's exit code
    (GRAVEST_FIRST; 0 if none). The ids name jobs and tasks as TaskIds.resolve_all reads them. A cancel of several
    cancels the active jobs named in one all-or-nothing call (cancel_together); every other id, and every id of the
    other commands, gets a call of its own (the RPCs are all-or-nothing, which other clients rely on), so each
    failure prints its line once. `request`: the RPC's request message, made with the ids and `fields`."""
    texts = id_words(texts)
    named = TaskIds(cli)
    targets, failed = named.resolve_all(texts)
    wholes = [int(text) for text in texts if JOB_ID.fullmatch(text) and "_" not in text and int(text) <= MAX_ID]
    before = {} if as_json else active(cli, wholes)  # for array_changes
    method = getattr(cli.conn.jobs, rpc)
    together = rpc == "CancelJobs" and len(targets) > 1
    replies = cancel_together(cli, method, targets, request, **fields) if together else {}
    alone, code = one_call_each(cli, method, [t for t in targets if t not in replies], request, **fields)
    replies.update(alone)
    failed = graver(failed, code)
    done = []
    shown: list[tuple[int | None, list[j.Job]]] = []  # (array, its tasks changed) or (None, jobs), in order
    ranges: dict[int, list[j.Job]] = {}  # the tasks N_[A-B,C] ids named, by array: one summary each
    for job, single in targets:
        jobs = replies[(job, single)]
        done += jobs
        if as_json or not jobs:
            continue
        array = named.ranged.get((job, single))
        if array is not None:
            if array not in ranges:
                ranges[array] = []
                shown.append((array, ranges[array]))
            ranges[array] += jobs
        elif not single and in_array(jobs[0], job):
            shown.append((job, array_changes(cli, job, before, verb == "cancelled")))
        else:
            shown.append((None, jobs))
    for array, jobs in shown:
        if array is not None:
            print(f"Array job {array}: {len(jobs)} task{'' if len(jobs) == 1 else 's'} {verb}")
        for line in lines(jobs, verb) if array is None or len(jobs) <= MANY else []:
            print(line)
    return done, failed


def one_call_each(cli, method, targets: list[tuple[int, bool]], request, **fields) -> tuple[dict, int]:
    """Call `method` for each (job id, single) of `targets` alone, with request(ids=[job id], single=single,
    **fields): the replies' jobs by target ([] for a refusal, whose line the call printed) and the gravest refusal's
    exit code (OK if none)."""
    replies: dict[tuple[int, bool], list] = {}
    failed = OK
    for job, single in targets:
        try:
            replies[(job, single)] = list(cli.conn.call(method, request(ids=[job], single=single, **fields)).jobs)
        except SystemExit as e:  # the call printed the line naming the id: on to the next
            if e.code == UNREACHABLE or (e.code == DENIED and fields.get("admin")):
                raise  # every other id would fail alike: an admin hold is refused for who asks, not for the id
            failed = graver(failed, e.code)
            replies[(job, single)] = []
    return replies, failed


def cancel_together(cli, method, targets: list[tuple[int, bool]], request=j.JobIdsRequest,
                    **fields) -> dict[tuple[int, bool], list[j.Job]]:
    """Cancel, in one all-or-nothing call, every (job id, single) of `targets` that names an active job, so that
    none of them starts while the others are cancelled (one call each let a waiting job start as soon as the
    running ones were gone); the replies by target. Those naming no active job (unknown, ended, or not the
    caller's) are left out, for calls of their own that say why. `fields`: the request's other fields (scancel's
    filters)."""
    listed = active(cli, [job for job, _ in targets])  # also every active task of an array named
    arrays = {x.array_job_id for x in listed.values() if x.HasField("array_job_id")}
    live = [(job, single) for job, single in targets if job in listed or (not single and job in arrays)]
    wholes = [job for job, single in live if not single and job in arrays]  # ids that stand for every task
    # `single` is one flag for the whole request: right for every id when no id is a whole array (a job that is
    # no array's is itself either way), or when every id is one
    if not live or (wholes and len(wholes) != len(live)):
        return {}
    reply = cli.conn.attempt(method, request(ids=[job for job, _ in live], single=not wholes, **fields))
    if reply is None:  # something changed since the listing, or one is refused (a filter): one call each
        return {}
    return {target: [x] for target, x in zip(live, reply.jobs)}  # one per id, in order


def finish(done: list[j.Job], failed: int, as_json: bool) -> None:
    if as_json and (done or not failed):
        from vipu.cli.job_detail import job_data  # here: job_detail imports this module

        if all(isinstance(x, j.Job) for x in done):  # each job shaped as `vipu show job --json`
            print_json([job_data(x) for x in done])
        else:  # sprio's rows, as their messages
            print_rows(done)
    import typer  # here: `vipu queue`, which needs the rest of this module, runs without typer (fast_path.py)

    raise typer.Exit(failed)
