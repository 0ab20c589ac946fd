"""Slurm's words for jobs: `vipu submit|queue|cancel|hold|release|requeue|history|info|priority` and `vipu logs`
(`vipu show job`: job_detail.py)."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

import typer

from vipu.cli.context import JSON_HELP, JsonOption, NoHeaderOption
from vipu.cli.failure import BAD_INPUT, error, fail
from vipu.cli.job_detail import clock, exit_code, show, stamp
from vipu.cli.job_ids import (
    IDS,
    IDS_HELP,
    PRIORITY_IDS_HELP,
    TaskIds,
    act,
    finish,
    graver,
    job_id,
    lines,
    one_call_each,
    resolve_id,
)
from vipu.cli.output import as_dict, print_json, print_rows, table
from vipu.scheduler.arrays import spans
from vipu.v1 import job_pb2 as j
from vipu.validation import MAX_REQUEST_BYTES, MAX_REQUEST_ID, MAX_SPEC_BYTES, MAX_SPECS_PER_CALL

def split(values: list[str] | None) -> list[str]:
    """squeue's comma lists (-t R,PD) as well as a repeated option."""
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def absolute(path: str) -> str:
    """An output path as sbatch takes it: relative to where the command runs (the controller has no such place)."""
    return path if path.startswith("/") else str(Path.cwd() / path)


def relative_output(text: bytes) -> str | None:
    """The spec's own output path if it is relative; None otherwise, also for a spec the controller will refuse
    (it says why, naming the field)."""
    if b"output" not in text:
        return None
    from vipu.documents import parse_document

    try:
        value = parse_document(text.decode()).get("output")  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001
        return None
    return value if isinstance(value, str) and value and not value.startswith("/") else None


class UnreadableSpec(Exception):
    """A spec file that cannot be sent: missing, not a file, or too big."""


def read_spec(path: str) -> tuple[bytes, str]:
    if path == "-":
        data = sys.stdin.buffer.read(MAX_SPEC_BYTES + 1)  # no more than one byte past the limit is read
        if len(data) > MAX_SPEC_BYTES:
            raise UnreadableSpec(f"the job spec on stdin is more than 1 MB; a spec may be at most {MAX_SPEC_BYTES:,}"
                                 " bytes: keep data in files it names")
        return data, "<stdin>"
    file = Path(path)
    if not file.is_file():
        raise UnreadableSpec(f"job spec {path} does not exist or is not a file; give the path of a YAML or JSON spec")
    size = file.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise UnreadableSpec(f"job spec {path} is {size:,} bytes; a spec may be at most 1 MB ({MAX_SPEC_BYTES:,}"
                             " bytes): keep data in files it names")
    return file.read_bytes(), path


def submit_request(path: str | None, flags: dict, request_id: str) -> j.SubmitJobRequest:
    """The request for one spec file (None: the flags are the spec), the flags overriding the file's fields."""
    if path is None:
        return j.SubmitJobRequest(spec=json.dumps(flags).encode(), source="flags", request_id=request_id)
    (text, source), overrides = read_spec(path), dict(flags)
    relative = relative_output(text) if "output" not in overrides else None
    if relative:
        overrides["output"] = absolute(relative)
    return j.SubmitJobRequest(spec=text, source=source, overrides_json=json.dumps(overrides) if overrides else "",
                              request_id=request_id)


def submit_requests(specs: list[str], flags: dict, request_id: str) -> list[j.SubmitJobRequest]:
    """A request per spec file (none: one of the flags), ID/k the request id of the k-th of several; every file that
    cannot be sent is named (spec k of n, as the controller names a refused one) before nothing is sent."""
    many = len(specs) > 1
    requests, unreadable = [], []
    for k, path in enumerate(specs or [None]):
        try:
            requests.append(submit_request(path, flags, f"{request_id}/{k + 1}" if many else request_id))
        except UnreadableSpec as e:
            unreadable.append(f"spec {k + 1} of {len(specs)}: {e}; nothing was queued" if many else str(e))
    for line in unreadable:
        error("vipu", line)
    if unreadable:
        raise SystemExit(BAD_INPUT)
    return requests


def register(app: typer.Typer) -> None:
    @app.command()
    def submit(
        ctx: typer.Context,
        specs: list[str] = typer.Argument(
            None, metavar="[SPEC]...", show_default=False,
            help="YAML or JSON job specs ('-' reads one from stdin), each its own job, all queued or none; omit to"
                 " use the flags"),
        name: str = typer.Option(None, "--name", help="job name"),
        ipus: int = typer.Option(None, "--ipus", help="IPUs: a power of two"),
        time_limit: str = typer.Option(None, "--time-limit", help="e.g. 10m, 1h30m, 1-00:00:00; a bare number is"
                                       " seconds (sbatch --time reads minutes)"),
        duration: str = typer.Option(None, "--duration", help="a sleep workload of this length (e.g. 30s)"),
        qos: str = typer.Option(None, "--qos"),
        user: str = typer.Option(None, "--user"),
        account: str = typer.Option(None, "--account"),
        nice: int = typer.Option(None, "--nice"),
        dependency: str = typer.Option(None, "--dependency", "-d", help="afterok:ID,afterany:ID,afternotok:ID,singleton"),
        array: str = typer.Option(None, "--array", "-a", help="e.g. 0-99%10"),
        hold: bool = typer.Option(None, "--hold/--no-hold", help="submit held (release with vipu release)"),
        begin: str = typer.Option(
            None, "--begin", "-b",
            help="not before this time (BeginTime): now+10m, now+1hour, now+90 (seconds), or ISO-8601 like"
                 " 2026-11-22T14:00:00 (local time unless it ends in Z or +01:00)",
        ),
        requeue: bool = typer.Option(None, "--requeue/--no-requeue", help="requeue after a node failure"),
        allocation: str = typer.Option(None, "--allocation"),
        output: str = typer.Option(None, "--output", "-o",
                                   help="file written when the job's run ends; %j job id, %x name (see the spec)"),
        request_id: str = typer.Option(None, "--request-id", help="a retry with the same id never queues twice (with"
                                       " several specs, each gets ID/1, ID/2, ...)"),
        parsable: bool = typer.Option(False, "--parsable",
                                      help="print only the job id (an array's: its first task's), as sbatch"
                                           " --parsable, e.g. jid=$(vipu submit --parsable ...)"),
        json_out: bool = typer.Option(
            False, "--json", "--showjson",
            help=f"{JSON_HELP}: job_ids (every job), duplicate (all were queued before, by these request ids), jobs"
                 " (job_ids and duplicate per spec)"),
    ):
        """Queue a job (sbatch): from a spec file, or from flags like `sbatch --wrap`. Prints the job id.

        Several spec files: a job each, in one call, all queued or none (a refusal names its file); flags apply to all."""
        cli = ctx.obj
        flags = {
            "name": name, "ipus": ipus, "time_limit": time_limit, "qos": qos, "user": user, "account": account,
            "nice": nice, "dependency": dependency, "array": array, "hold": hold, "begin": begin, "requeue": requeue,
            "allocation": allocation, "output": output,
        }
        flags = {k: v for k, v in flags.items() if v is not None}
        if output is not None:
            flags["output"] = absolute(output)
        if duration is not None:
            flags["workload"] = {"kind": "sleep", "duration": duration}
        specs = specs or []
        if "-" in specs and len(specs) > 1:
            fail("vipu", "'-' (a spec on stdin) must be the only spec; give the others as files", BAD_INPUT)
        if len(specs) > MAX_SPECS_PER_CALL:
            fail("vipu", f"{len(specs):,} specs given; one command queues at most {MAX_SPECS_PER_CALL:,}: split them"
                 " over several commands", BAD_INPUT)
        if not specs and "ipus" not in flags:
            fail("vipu", "give a job spec file, or at least --ipus N (e.g. vipu submit --ipus 4 --duration 30s)", BAD_INPUT)
        if request_id is not None:  # each spec of several gets ID/k: room for the longest of those
            longest = MAX_REQUEST_ID - (len(f"/{len(specs)}") if len(specs) > 1 else 0)
            if not request_id or len(request_id) > longest or not request_id.isprintable():
                added = f" (each of the {len(specs)} specs gets /k added)" if longest < MAX_REQUEST_ID else ""
                fail("vipu", f"--request-id must be 1 to {longest} printable characters{added}; e.g. a UUID",
                     BAD_INPUT)
        # a fresh id per command: retries inside this call are then safe
        request_id = request_id or uuid.uuid4().hex
        requests = submit_requests(specs, flags, request_id)
        if len(requests) == 1:
            replies = [cli.conn.call(cli.conn.jobs.SubmitJob, requests[0], retry=True)]
        else:
            batch = j.SubmitJobsRequest(jobs=requests)
            if batch.ByteSize() > MAX_REQUEST_BYTES:
                fail("vipu", f"these {len(specs)} specs are {batch.ByteSize():,} bytes together; one command sends at"
                     f" most {MAX_REQUEST_BYTES:,}: split them over several commands", BAD_INPUT)
            replies = list(cli.conn.call(cli.conn.jobs.SubmitJobs, batch, retry=True).jobs)
        if cli.wants_json(json_out):  # the same keys for one spec or many, so a wrapper of `vipu submit "$@"` holds
            print_json({"job_ids": [i for reply in replies for i in reply.job_ids],
                        "duplicate": all(reply.duplicate for reply in replies),
                        "jobs": as_dict(j.SubmitJobsResponse(jobs=replies))["jobs"]})
            return
        for request, reply in zip(requests, replies):
            again = f"request id {request.request_id} was used before: that submit's jobs, not queued again"
            if parsable:
                print(reply.job_ids[0])
                if reply.duplicate:  # stdout is the id alone, for $(...)
                    print(f"vipu: {again}", file=sys.stderr)
                continue
            first, last = reply.job_ids[0], reply.job_ids[-1]
            print(f"Submitted job {first}" if len(reply.job_ids) == 1 else
                  f"Submitted array job {first} ({len(reply.job_ids)} tasks: jobs {first}-{last})")
            if reply.duplicate:  # a retry of an earlier submit: said, so nobody waits for a second copy
                print(f"({again})")

    @app.command()
    def queue(
        ctx: typer.Context,
        user: list[str] = typer.Option(None, "--user", "-u", help="only these users' jobs"),
        state: list[str] = typer.Option(None, "--state", "-t", help="only these states (names or PD, R, ...)"),
        array: bool = typer.Option(False, "--array", "-r",
                                   help="a line for each pending array task (default: one line for a run of them)"),
        json_out: bool = JsonOption,
        no_header: bool = NoHeaderOption,
    ):
        """Pending and running jobs (squeue), running first, then pending in priority order; pending tasks of an
        array that wait for the same reason share a line, 26_[10-99] (with --json, or -r, a line each)."""
        cli = ctx.obj
        as_json = cli.wants_json(json_out)
        request = j.ListJobsRequest(users=split(user), states=split(state), brief=not as_json)
        reply = cli.conn.call(cli.conn.jobs.ListJobs, request)
        if as_json:
            print_rows(reply.jobs)
            return
        now = time.time()
        rows, tasks = [], {}  # tasks: row number -> the pending array tasks it stands for
        last = None  # what the last row's pending array tasks share
        for x in reply.jobs:
            elapsed = now - x.start_time if x.HasField("start_time") and x.state_code in ("R", "CG") else 0
            where = x.partition if x.partition else f"({x.reason or 'None'})"
            row = [job_id(x), x.name, x.user, x.state_code, clock(elapsed), x.ipus, where]
            key = (x.array_job_id, *row[1:]) if x.HasField("array_job_id") and x.state_code == "PD" else None
            if not array and key is not None and key == last:
                tasks[len(rows) - 1].append(x.array_task_id)
                continue
            last = key
            if key is not None:
                tasks[len(rows)] = [x.array_task_id]
            rows.append(row)
        for n, indices in tasks.items():
            if len(indices) > 1:
                rows[n][0] = f"{rows[n][0].split('_')[0]}_[{spans(sorted(indices))}]"
        print(table(["JOBID", "NAME", "USER", "ST", "TIME", "IPUS", "PARTITION(REASON)"], rows, cli.with_header(no_header)))

    def bulk(command: str, rpc: str, verb: str, doc: str):
        @app.command(command, context_settings=IDS)
        def action(ctx: typer.Context,
                   ids: list[str] = typer.Argument(..., help=IDS_HELP),
                   json_out: bool = JsonOption):
            cli = ctx.obj
            as_json = cli.wants_json(json_out)
            finish(*act(cli, rpc, verb, ids, as_json), as_json)

        action.__doc__ = doc

    @app.command(context_settings=IDS)
    def cancel(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(None, help=IDS_HELP),
        user: list[str] = typer.Option(None, "--user", "-u", help="also every active job of this user (scancel -u)"),
        json_out: bool = JsonOption,
    ):
        """Cancel jobs (scancel): pending ones leave the queue, running ones stop."""
        cli = ctx.obj
        users = split(user)
        if not ids and not users:
            fail("vipu", "name job ids or --user USER (vipu queue lists them)", BAD_INPUT)
        as_json = cli.wants_json(json_out)
        done, failed = act(cli, "CancelJobs", "cancelled", ids or [], as_json)
        if users:  # one call: the server picks the users' active jobs
            reply = cli.conn.call(cli.conn.jobs.CancelJobs, j.JobIdsRequest(users=users))
            done += reply.jobs
            for line in [] if as_json else lines(reply.jobs, "cancelled"):
                print(line)
        finish(done, failed, as_json)

    @app.command("hold", context_settings=IDS)
    def hold_jobs(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(..., help=IDS_HELP),
        admin: bool = typer.Option(
            False, "--admin",
            help="an admin hold (JobHeldAdmin): needs an admin (without --secure every caller is one), and only"
                 " an admin can release it",
        ),
        json_out: bool = JsonOption,
    ):
        """Hold pending jobs (scontrol hold): they wait with reason JobHeldUser, or JobHeldAdmin with --admin."""
        cli = ctx.obj
        as_json = cli.wants_json(json_out)
        finish(*act(cli, "HoldJobs", "held", ids, as_json, admin=admin), as_json)

    bulk("release", "ReleaseJobs", "released",
         "Release held jobs (scontrol release); an admin hold (JobHeldAdmin) only by an admin.")
    bulk("requeue", "RequeueJobs", "requeued",
         "Put running jobs, or jobs that ended COMPLETED, FAILED, TIMEOUT, NODE_FAIL or PREEMPTED (not CANCELLED:"
         " submit those again), back in the queue under the same id; an array job: its tasks that are not pending.")

    @app.command(context_settings=IDS)
    def logs(ctx: typer.Context, id: str = typer.Argument(..., help="job id: N, or N_T for task T of array N"),
             json_out: bool = JsonOption):
        """A training job's loss per step, emulated step time on the real Pod, and per-IPU utilisation and SRAM.

        Each step line splits the emulated step into the parts `vipu plan` predicts, in its order and by
        its names (compute, pipeline bubble, tensor-parallel collectives, pipeline sends, batch-norm
        statistics, syncs, data-parallel allreduce, streaming memory), then comm and the bubble's share.

        A requeued job's current run, below a line on how each earlier run ended.

        --json: the run as data (run, environment, earlier_runs, steps, result, error, ended) and the lines."""
        cli = ctx.obj
        reply = cli.conn.call(cli.conn.jobs.JobLogs, j.GetJobRequest(id=resolve_id(cli, id)))
        if cli.wants_json(json_out):
            run = json.loads(reply.record_json) if reply.record_json else {  # a job that never trained
                "run": None, "environment": [], "earlier_runs": [], "steps": [], "result": None, "error": None,
                "ended": None}
            print_json({"job": id, **run, "lines": list(reply.lines)})
        elif reply.lines:
            print("\n".join(reply.lines))
        else:
            print(f"job {id} has no training output (yet): only `train` workloads log steps")

    @app.command()
    def history(
        ctx: typer.Context,
        user: list[str] = typer.Option(None, "--user", "-u", help="only these users' jobs"),
        state: list[str] = typer.Option(None, "--state", "-s",
                                        help="only rows in these states (default: every ended one)"),
        limit: int = typer.Option(0, "--limit", help="only the last N rows: the N most recently ended (0: all)"),
        duplicates: bool = typer.Option(
            False, "--duplicates", "-D",
            help="also each earlier run of a requeued job (after a node failure, a preemption or vipu requeue),"
                 " a row each with that run's state, start and end"),
        json_out: bool = JsonOption,
        no_header: bool = NoHeaderOption,
    ):
        """Ended jobs with submit, start, end, elapsed, state and exit code (sacct), in the order they ended.

        Each job once, as its latest run left it: --state matches that run's state, and a requeued
        job back in the queue is in `vipu queue`. --duplicates: every run of each job, a row each.
        ExitCode is code:signal, 0:15 for a run the controller stopped (--json: exit_code, signal)."""
        cli = ctx.obj
        if limit < 0:
            fail("vipu", f"--limit is {limit}; give 0 for every job or N > 0 for the last N", BAD_INPUT)
        as_json = cli.wants_json(json_out)
        request = j.HistoryRequest(users=split(user), states=split(state), limit=limit, brief=not as_json,
                                   duplicates=duplicates)
        reply = cli.conn.call(cli.conn.jobs.History, request)
        if as_json:
            print_rows(reply.jobs)
            return
        rows = []
        for x in reply.jobs:
            started, ended = x.HasField("start_time"), x.HasField("end_time")
            elapsed = clock(x.end_time - x.start_time) if started and ended else "0:00"
            rows.append([job_id(x), x.name, x.user, x.state, exit_code(x), stamp(x.submit_time),
                         stamp(x.start_time) if started else "Unknown", stamp(x.end_time) if ended else "Unknown", elapsed, x.ipus])
        print(table(["JobID", "JobName", "User", "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "IPUs"], rows, cli.with_header(no_header)))

    @app.command()
    def info(ctx: typer.Context, json_out: bool = JsonOption, no_header: bool = NoHeaderOption):
        """IPUs idle, allocated, draining, drained and failed per IPU-Link domain (a Pod64 of a Bow Pod; sinfo)."""
        cli = ctx.obj
        reply = cli.conn.call(cli.conn.jobs.ClusterInfo, j.ClusterInfoRequest())

        def name(ild) -> str:  # pod64-1 for the second Pod64 of a Bow-Pod128; pod16-0 for a Bow-Pod16's one domain
            return f"pod{ild.total}-{ild.ild}"

        if cli.wants_json(json_out):
            data = as_dict(reply)
            for row, ild in zip(data["ilds"], reply.ilds):
                row["name"] = name(ild)  # what the table shows
            print_json(data)
            return
        rows = [[name(r), r.total, r.idle, r.allocated, r.draining, r.drained, r.failed] for r in reply.ilds]
        header = ["ILD", "IPUS", "IDLE", "ALLOCATED", "DRAINING", "DRAINED", "FAILED"]
        print(table(header, rows, cli.with_header(no_header)))
        print(f"\n{reply.pod}: {reply.running_jobs} running, {reply.pending_jobs} pending")

    @app.command(context_settings=IDS)
    def priority(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(None, help=PRIORITY_IDS_HELP),
        json_out: bool = JsonOption,
        no_header: bool = NoHeaderOption,
    ):
        """Each pending job's priority and its weighted factors (sprio)."""
        cli = ctx.obj
        as_json = cli.wants_json(json_out)
        targets, failed = TaskIds(cli).resolve_all(ids or [])
        method = cli.conn.jobs.Priorities
        found = [] if ids else list(cli.conn.call(method, j.PrioritiesRequest()).jobs)  # no ids: every pending job
        for single in (False, True):  # a call for the ids of each kind (single: a task, not a whole array)
            wanted = [job for job, one in targets if one is single]
            reply = cli.conn.attempt(method, j.PrioritiesRequest(ids=wanted, single=single)) if wanted else None
            if reply is not None:
                found += reply.jobs
            elif wanted:  # refused, one of them not pending (or not the caller's): a call each, each refusal its line
                alone, code = one_call_each(cli, method, [(job, single) for job in wanted], j.PrioritiesRequest)
                found += [x for rows in alone.values() for x in rows]
                failed = graver(failed, code)
        found = sorted({r.job_id: r for r in found}.values(), key=lambda r: -r.priority)  # 26 and 26_3: 26_3 once
        if as_json:
            finish(found, failed, as_json)
        rows = [[job_id(r), r.user, f"{r.priority:.0f}", f"{r.age:.0f}", f"{r.fairshare:.0f}", f"{r.job_size:.0f}",
                 f"{r.qos:.0f}", f"{r.nice:.0f}"] for r in found]
        if found or not failed:
            print(table(["JOBID", "USER", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "QOS", "NICE"], rows,
                        cli.with_header(no_header)))
        raise typer.Exit(failed)

    app.add_typer(show, name="show")
