"""Slurm's words for jobs: `vipu queue|hold|release|requeue|history|info|priority` and `vipu logs` (`vipu submit`:
submit.py; `vipu cancel`: cancel_command.py; `vipu update job`: update_command.py; `vipu show job`: job_detail.py)."""

from __future__ import annotations

import json
import time

import typer

from vipu.cli.context import JsonOption, NoHeaderOption
from vipu.cli.failure import BAD_INPUT, fail
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

def split(values: list[str] | None) -> list[str]:
    """squeue's comma lists (-t R,PD) as well as a repeated option."""
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def register(app: typer.Typer) -> None:
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
        reply = cli.conn.every_page(cli.conn.jobs.ListJobs, request)
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
        """A job's output: a program's (the end of its output file, then the steps it reported through vipu.sdk),
        or a training job's loss per step, emulated step time on the real Pod, and per-IPU utilisation and SRAM.

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
            print(f"job {id} has no output (yet): only programs and `train` workloads log")

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
        reply = cli.conn.every_page(cli.conn.jobs.History, request)
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
        found = [] if ids else list(cli.conn.every_page(method, j.PrioritiesRequest()).jobs)  # every pending job
        for single in (False, True):  # a call for the ids of each kind (single: a task, not a whole array)
            wanted = [job for job, one in targets if one is single]
            reply = cli.conn.attempt(method, j.PrioritiesRequest(ids=wanted, single=single)) if wanted else None
            if reply is not None:
                found += reply.jobs
                if reply.next_page_token:  # an array's thousands of tasks: the pages after the first
                    rest = j.PrioritiesRequest(ids=wanted, single=single, page_token=reply.next_page_token)
                    found += cli.conn.every_page(method, rest).jobs
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
