"""Job ids as users write them, N or N_T (task T of array job N) as squeue prints them, and what scancel and
scontrol do with several: act on each id that can be acted on and report each that cannot."""

from __future__ import annotations

import re

import typer

from vipu.cli.failure import BAD_INPUT, NOT_FOUND, OK, UNREACHABLE, fail
from vipu.cli.output import print_json, print_rows
from vipu.v1 import job_pb2 as j


def job_id(x: j.Job | j.PriorityFactors) -> str:
    """As squeue shows a job: N, or N_T for task T of array job N."""
    if x.HasField("array_job_id"):
        return f"{x.array_job_id}_{x.array_task_id}"
    return str(x.id if isinstance(x, j.Job) else x.job_id)


def in_array(x: j.Job, array: int) -> bool:
    return x.HasField("array_job_id") and x.array_job_id == array


# Exactly N or N_T, parsed by hand: int() accepts underscores, so it read 26_50 as job 2650 and 1_2_6 as job 126.
JOB_ID = re.compile(r"([0-9]+)(?:_([0-9]+))?")
MAX_ID = 2**63 - 1  # job ids are int64 on the wire
ID_FORMS = "give N (a job, or all tasks of array job N) or N_T (task T of array job N), e.g. 26 or 26_50"
IDS = {"ignore_unknown_options": True}  # so `-3` reaches the job id check and its one line, not click's usage box


def parse_id(text: str) -> tuple[int, int | None]:
    """(job, task) from N or N_T; anything else is refused."""
    match = JOB_ID.fullmatch(text)
    if not match or any(g is not None and int(g) > MAX_ID for g in match.groups()):
        fail("vipu", f"job id {text!r} is not a job id; {ID_FORMS}", BAD_INPUT)
    job, task = match.groups()
    return int(job), None if task is None else int(task)


def resolve_id(cli, text: str) -> int:
    """The job id that N or N_T names. ListJobs lists the array's active tasks; an ended task is known only to
    History, which lists every ended job, so it is asked only when the task is not active."""
    array, task = parse_id(text)
    if task is None:
        return array
    listed = cli.conn.call(cli.conn.jobs.ListJobs, j.ListJobsRequest(ids=[array], brief=True)).jobs
    tasks = {x.array_task_id: x.id for x in listed if in_array(x, array)}
    if task not in tasks:
        ended = cli.conn.call(cli.conn.jobs.History, j.HistoryRequest(brief=True)).jobs
        tasks.update((x.array_task_id, x.id) for x in ended if in_array(x, array))
    if task in tasks:
        return tasks[task]
    if tasks:
        fail("vipu", f"job id {text!r}: array job {array} has no task {task}; `vipu queue` and `vipu history` list"
             " its tasks", NOT_FOUND)
    head = cli.conn.call(cli.conn.jobs.GetJob, j.GetJobRequest(id=array))  # NOT_FOUND if there is no such job
    what = f"it is task {job_id(head)}" if head.HasField("array_job_id") else "it is a single job"
    fail("vipu", f"job id {text!r}: job {array} is not an array job ({what}); {ID_FORMS}", BAD_INPUT)


def held(x: j.Job) -> str:
    """A hold matters only while the job waits: a cancelled job that was held is just CANCELLED."""
    return (" (held by an admin)" if x.admin_hold else " (held)") if x.held and x.state == "PENDING" else ""


MANY = 20  # more changed jobs than this: one line with their number instead of a line each
IDS_HELP = "job ids: N (an array job: all its tasks) or N_T (task T of array job N)"


def lines(jobs, verb: str) -> list[str]:
    if len(jobs) > MANY:
        return [f"{len(jobs)} jobs {verb}"]
    return [f"Job {job_id(x)} {verb}: {x.state}{held(x)}" for x in jobs]


def active(cli, ids: list[int]) -> dict[int, j.Job]:
    """The active jobs and array tasks these ids name, by job id (none for no ids: ListJobs would list all)."""
    if not ids:
        return {}
    return {x.id: x for x in cli.conn.call(cli.conn.jobs.ListJobs, j.ListJobsRequest(ids=ids, brief=True)).jobs}


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


def act(cli, rpc: str, verb: str, texts: list[str], as_json: bool, **fields) -> tuple[list[j.Job], int]:
    """What scancel and scontrol do with several ids: act on each id that can be acted on, print a line for each
    success and one error line for each failure; returns the jobs changed and the first failure's exit code (0 if
    none). N is a job or every task of array job N; N_T is one task, sent as `single` (the first task's job id is
    the array's own). A cancel of several cancels the active jobs named in one all-or-nothing call (cancel_together);
    every other id, and every id of the other commands, gets a call of its own (the RPCs are all-or-nothing, which
    other clients rely on), so each failure prints its line once."""
    ids = [parse_id(text) for text in texts]  # one malformed id and nothing is done
    before = {} if as_json else active(cli, [job for job, task in ids if task is None])  # for array_changes
    method = getattr(cli.conn.jobs, rpc)
    targets: list[tuple[int, bool]] = []  # (job id, single), each once
    failed = OK
    for text, (_, task) in zip(texts, ids):
        try:
            target = (resolve_id(cli, text), task is not None)
        except SystemExit as e:  # resolve_id printed the line naming the id: on to the next
            if e.code == UNREACHABLE:  # every other id would wait as long and fail alike
                raise
            failed = failed or e.code
            continue
        if target not in targets:
            targets.append(target)
    replies: dict[tuple[int, bool], list[j.Job]] = {}
    if rpc == "CancelJobs" and len(targets) > 1:
        replies = cancel_together(cli, method, targets)
    for target in targets:  # the rest one by one: each refusal prints its own line
        if target in replies:
            continue
        try:
            replies[target] = cli.conn.call(method, j.JobIdsRequest(ids=[target[0]], single=target[1], **fields)).jobs
        except SystemExit as e:  # the call printed the line naming the id: on to the next
            if e.code == UNREACHABLE:
                raise
            failed = failed or e.code
            replies[target] = []
    done = []
    for job, single in targets:
        jobs = replies[(job, single)]
        done += jobs
        if as_json or not jobs:
            continue
        if not single and in_array(jobs[0], job):
            tasks = array_changes(cli, job, before, verb == "cancelled")
            print(f"Array job {job}: {len(tasks)} task{'' if len(tasks) == 1 else 's'} {verb}")
            for line in lines(tasks, verb) if len(tasks) <= MANY else []:
                print(line)
        else:
            for line in lines(jobs, verb):
                print(line)
    return done, failed


def cancel_together(cli, method, targets: list[tuple[int, bool]]) -> dict[tuple[int, bool], list[j.Job]]:
    """Cancel, in one all-or-nothing call, every (job id, single) of `targets` that names an active job, so that
    none of them starts while the others are cancelled (one call each let a waiting job start as soon as the
    running ones were gone); the replies by target. Those naming no active job (unknown, ended, or not the
    caller's) are left out, for calls of their own that say why."""
    listed = active(cli, [job for job, _ in targets])  # also every active task of an array named
    arrays = {x.array_job_id for x in listed.values() if x.HasField("array_job_id")}
    live = [(job, single) for job, single in targets if job in listed or (not single and job in arrays)]
    wholes = [job for job, single in live if not single and job in arrays]  # ids that stand for every task
    # `single` is one flag for the whole request: right for every id when no id is a whole array (a job that is
    # no array's is itself either way), or when every id is one
    if not live or (wholes and len(wholes) != len(live)):
        return {}
    reply = cli.conn.attempt(method, j.JobIdsRequest(ids=[job for job, _ in live], single=not wholes))
    if reply is None:  # something changed since the listing: one call each
        return {}
    return {target: [x] for target, x in zip(live, reply.jobs)}  # one per id, in order


def finish(done: list[j.Job], failed: int, as_json: bool) -> None:
    if as_json and (done or not failed):
        print_rows(done)
    raise typer.Exit(failed)
