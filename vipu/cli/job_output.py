"""What `vipu logs` prints: one job's log, every task's of an array job (each under a line naming the task), or,
with -f, what comes as it comes until the job ends.

Why every task of an array under a header: Slurm gives each task a file of its own (slurm-%A_%a.out), and its users
read them together with `tail -n +1 slurm-26_*.out` or follow them with `tail -f slurm-26_*.out`, which name each
file above its lines; task 0's output alone, unannounced, passed for the whole array's.

Why -f asks the controller again and again (vipu/control/job_logs.py says why it does not stream): each ask sends
the mark the last reply gave (the bytes of a program's output read; the step reports read), so no line is shown twice
or skipped; the wait between asks doubles while nothing comes, from FIRST_WAIT_S to LONGEST_WAIT_S, and is
FIRST_WAIT_S again once something does. Text shows a line as far as the program has written it, as tail -f does (a
progress bar that ends its updates with a carriage return shows each); --json gives whole lines only, each an object.
What vipu says of a job (pending, how it ended) goes to stderr in text, so stdout is the job's output alone.
`vipu submit -W` (sbatch's --wait) waits for its jobs' ends the same way: wait_for_end.
"""

from __future__ import annotations

import json
import sys
import time

from vipu.cli.fast_path import leave
from vipu.cli.job_detail import exit_code
from vipu.cli.job_ids import TaskIds, parse_id
from vipu.cli.output import print_json
from vipu.cli.queue_rows import job_id
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.v1 import job_pb2 as j

FIRST_WAIT_S = 0.1
LONGEST_WAIT_S = 2.0
ENDED = frozenset(s.value for s in TERMINAL)
NO_RECORD = {"run": None, "environment": [], "earlier_runs": [], "steps": [], "result": None, "error": None,
             "ended": None}  # --json of a job that never logged


def logs(cli, text: str, as_json: bool, follow: bool) -> None:
    """`vipu logs ID`, or with `follow` `vipu logs -f ID`: ID is a job, an array job (every task) or a task."""
    array, task = parse_id(text)
    ids = TaskIds(cli)
    first = ask(cli, ids.resolve(text), follow=follow, partial=follow and not as_json)
    x = first.job
    if task is None and x.HasField("array_job_id") and x.array_job_id == array:  # the array's own id: every task
        tasks = ids.tasks(array)
        wanted = [tasks[t] for t in sorted(tasks)]
    else:
        wanted = [x.id]
    if follow:
        return Follow(cli, wanted, as_json, first).run()
    replies = [first if i == x.id else ask(cli, i) for i in wanted]
    if len(replies) == 1:
        return show(first, text, as_json)
    if as_json:
        return print_json({"job": text, "tasks": [data(r, job_id(r.job)) for r in replies]})
    for k, reply in enumerate(replies):
        print(("\n" if k else "") + f"==> job {job_id(reply.job)} ({reply.job.state}) <==")
        show(reply, job_id(reply.job), False)


def ask(cli, job: int, mark: j.LogMark | None = None, follow: bool = False, partial: bool = False) -> \
        j.JobLogsResponse:
    """JobLogs of `job`: whole, or with `follow` its lines after `mark` (None: a follow's first read), with
    `partial` the line the program is still writing too."""
    request = j.JobLogsRequest(id=job, follow=follow, partial=partial)
    if mark is not None:
        request.after.CopyFrom(mark)
    return cli.conn.call(cli.conn.jobs.JobLogs, request, retry=follow)  # (a read: a follow outlives a restart)


def data(reply: j.JobLogsResponse, shown: str) -> dict:
    run = json.loads(reply.record_json) if reply.record_json else NO_RECORD
    return {"job": shown, **run, "lines": list(reply.lines)}


def show(reply: j.JobLogsResponse, shown: str, as_json: bool) -> None:
    if as_json:
        print_json(data(reply, shown))
    elif reply.lines:
        print("\n".join(reply.lines))
    elif reply.record_json:  # a program that has printed nothing, or a training run yet to report a step
        print(f"job {shown} has no output (yet)")
    else:
        print(no_output(reply.job, shown))


def no_output(x: j.Job, shown: str) -> str:
    """Why a job has no run to show: its kind logs nothing, it has yet to start, or it never did."""
    if x.spec.workload.WhichOneof("kind") in ("sleep", "hold"):  # (unset: hold)
        return f"job {shown} has no output: only programs and `train` workloads log"
    if x.state == "PENDING":
        return f"job {shown} is pending ({x.reason or 'waiting'}): no output yet"
    if not x.HasField("started"):
        return f"job {shown} never ran: it ended {x.state} before it started"
    return f"job {shown} has no output (yet)"


class Follow:
    """`vipu logs -f`: the jobs' lines as they come, each job's end as it ends; done when all have ended."""

    def __init__(self, cli, jobs: list[int], as_json: bool, first: j.JobLogsResponse):
        self.cli, self.as_json = cli, as_json
        self.first = {first.job.id: first}  # the reply that named the job: its first read
        self.marks: dict[int, j.LogMark | None] = dict.fromkeys(jobs)  # the jobs not ended yet
        self.several = len(jobs) > 1
        self.pending: dict[int, str] = {}  # jobs said to be pending, with the reason said (said again on a change)
        self.last: int | None = None  # the job whose lines were printed last (a header when it changes)
        self.line_open = False  # the last line printed has no newline yet (text only)

    def run(self) -> None:
        wait = FIRST_WAIT_S
        try:
            while self.marks:
                came = False
                for job in list(self.marks):
                    came |= self.read(job)
                if not self.marks:
                    break
                wait = FIRST_WAIT_S if came else min(2 * wait, LONGEST_WAIT_S)
                time.sleep(wait)
        except KeyboardInterrupt:  # Ctrl-C: quietly, as tail -f, with the shell's code for it
            leave(130)
        leave(0)

    def read(self, job: int) -> bool:
        """`job`'s new lines, printed; whether any came. An ended job is read until a read comes back empty with
        its mark closed (the controller read its state before its lines, and a run's last lines may come after
        its job's end: a training run cancelled mid-step), then its end is said."""
        came = False
        while job in self.marks:
            sent = self.marks[job]
            reply = self.first.pop(job, None) or ask(self.cli, job, sent, True, not self.as_json)
            self.marks[job] = reply.mark
            x, shown = reply.job, job_id(reply.job)
            if x.state == "PENDING" and self.pending.get(job) != x.reason:  # (a hold, a release, a requeue)
                self.pending[job] = x.reason
                self.say(x, {"job": shown, "state": x.state, "reason": x.reason},
                         f"job {shown} is pending ({x.reason or 'waiting'}): its output follows once it starts")
            elif x.state != "PENDING":
                self.pending.pop(job, None)
            if reply.lines:
                came = True
                if self.as_json:
                    for line in reply.lines:
                        print(json.dumps({"job": shown, "line": line}))
                else:
                    self.text(x, sent, list(reply.lines), reply.mark.mid_line)
            elif x.state in ENDED and reply.mark.closed:  # (not closed: the run's last lines are still to come)
                del self.marks[job]
                code = x.exit_code if x.HasField("exit_code") else 0
                said = no_output(x, shown) if not x.HasField("started") else \
                    f"job {shown} ended {x.state}, exit code {exit_code(x)}" + (f" ({x.reason})" if x.reason else "")
                self.say(x, {"job": shown, "state": x.state, "exit_code": code, "signal": x.signal}, said)
            print(end="", flush=True)
            if x.state not in ENDED or not reply.lines:
                break
        return came

    def text(self, x: j.Job, sent: j.LogMark | None, lines: list[str], open_line: bool) -> None:
        """A job's lines, the last left open if the program has not ended it. A reply after one that left a line
        open starts with "" when that line ends (its newline, or a line of vipu's that is not its rest); if a header
        or a notice has ended it on the screen already, that "" would show as an empty line."""
        if sent is not None and sent.mid_line and lines[0] == "" and not (self.line_open and self.last == x.id):
            del lines[0]
        if lines:
            self.header(x)
            print("\n".join(lines), end="" if open_line else "\n")
            self.line_open = open_line

    def header(self, x: j.Job) -> None:
        """Several jobs: a line naming the job above its lines whenever they follow another's, as tail -f does."""
        if self.several and self.last != x.id:
            self.end_line()
            print(("\n" if self.last is not None else "") + f"==> job {job_id(x)} <==")
        self.last = x.id

    def end_line(self, stream=None) -> None:
        """Ends a line the program has not ended, before a line of vipu's own (its next lines start a line), on the
        stream that line goes to: a terminal shows both, and stdout stays the program's output."""
        if self.line_open:
            print(file=stream or sys.stdout)
            self.line_open = False

    def say(self, x: j.Job, as_data: dict, text: str) -> None:
        if self.as_json:
            print(json.dumps(as_data))
        else:  # on stderr, as tail says what is not the file's: `vipu logs -f N > copy` copies the output alone
            print(end="", flush=True)  # (so no header either: it names the job, and stdout keeps output and headers)
            self.end_line(sys.stderr)
            print(text, file=sys.stderr, flush=True)


def wait_for_end(cli, jobs: list[int]) -> int:
    """sbatch -W: waits until every job has ended, asking as `vipu logs -f` asks (the wait between asks doubling
    while nothing ends), and gives sbatch's exit code: the highest of the jobs' codes, 1 for one a signal ended
    (sbatch's _job_wait: WEXITSTATUS if the job exited, else 1). Each ask is one listing of the jobs still waited
    for, in every state: an array's thousands of tasks are not a call each. A job the listing lacks (its record
    lost, a rollback dropped it) is waited for no longer, said as sbatch says it, with no code of its own: a listing
    of ended jobs alone left it waited for forever. A controller that does not answer (a restart, however long it
    takes) is waited for too, said once, as sbatch retries: the jobs run on meanwhile, and a script that runs
    `vipu submit -W job.sh && next` wants their end, not a failure after --timeout."""
    waiting, code, wait, down = set(jobs), 0, FIRST_WAIT_S, False
    every_state = sorted(s.value for s in JobState)
    try:
        while waiting:
            request = j.HistoryRequest(ids=sorted(waiting), states=every_state, brief=True)
            listing = listing_or_down(cli, request)
            if not isinstance(listing, j.ListJobsResponse):  # said once a run of such asks, in sbatch's words
                if not down:
                    print(f"vipu: error: currently unable to load job state information, retrying: {listing}",
                          file=sys.stderr, flush=True)
                down = True
                time.sleep(wait)
                wait = min(2 * wait, LONGEST_WAIT_S)
                continue
            down = False
            listed = {x.id: x for x in listing.jobs}
            for job in sorted(waiting - listed.keys()):
                print(f"vipu: error: job {job} no longer found and exit code not found", file=sys.stderr, flush=True)
            ended = [x for i, x in listed.items() if i in waiting and x.state in ENDED]
            waiting &= {x.id for x in listed.values() if x.state not in ENDED}
            for x in ended:
                code = max(code, 1 if x.signal else x.exit_code if x.HasField("exit_code") else 0)
            if ended:
                wait = FIRST_WAIT_S
            if waiting:
                time.sleep(wait)
                wait = min(2 * wait, LONGEST_WAIT_S)
    except KeyboardInterrupt:  # Ctrl-C: the jobs go on, as sbatch's
        leave(130)
    return code


def listing_or_down(cli, request: j.HistoryRequest) -> j.ListJobsResponse | str:
    """-W's listing, or why the controller does not answer (its retries past --timeout); any other failure as every
    call's."""
    import grpc

    from vipu.client import ApiError
    from vipu.client.caller import NOT_RETRIED

    try:
        return cli.conn.client.every_page(cli.conn.jobs.History, request, retry=True)
    except ApiError as e:
        if e.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) or e.reason in NOT_RETRIED:
            cli.conn.fail(e, request)
        return e.message
