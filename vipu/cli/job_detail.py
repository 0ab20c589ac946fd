"""`vipu show job`: everything about one job, as scontrol show job prints it, and the fields of a job the
listings share with it (squeue's TIME, sacct's ExitCode, times as Slurm writes them)."""

from __future__ import annotations

from types import SimpleNamespace

import typer

from vipu.cli.batch_detail import batch_fields, built_in_stdout, print_script
from vipu.cli.context import JsonOption
from vipu.cli.job_ids import IDS, in_array, job_id, parse_id, resolve_id
from vipu.cli.nodes import DEFAULT_PARTITION, Machines, blocks_of, placed
from vipu.cli.output import as_dict, print_json
from vipu.cli.queue_rows import eligible_of, end_of, reason, start_of
from vipu.cli.slurm_time import clock, limit, stamp
from vipu.client.messages import seconds, to_data
from vipu.partition.node_names import hostlist
from vipu.v1 import job_pb2 as j

show = typer.Typer(help="Show one job in detail.", no_args_is_help=True)

# what scontrol shows as an ended job's Reason (a pending job's comes from the controller)
def exit_code(x: j.Job) -> str:
    """sacct's ExitCode, code:signal: 0:15 for a run the controller stopped (the controller says which: signal); a
    job that never ran is 0:0."""
    return f"{x.exit_code if x.HasField('exit_code') else 0}:{x.signal}"


@show.command("job", context_settings=IDS)
def show_job(ctx: typer.Context, id: str = typer.Argument(..., help="job id: N, or N_T for task T of array N"),
             json_out: bool = JsonOption,
             script: bool = typer.Option(False, "--script", help="print the job's batch script exactly as submitted"
                                         " (scontrol write batch_script)")):
    """Everything about a job, including why it is pending and when it may start (scontrol show job).

    An array job's id N shows every task, a block each (--json: task N_0's, with every task's under "tasks")."""
    cli = ctx.obj
    x = cli.conn.call(cli.conn.jobs.GetJob, j.GetJobRequest(id=resolve_id(cli, id)))
    if script:
        print_script(x, id, cli.wants_json(json_out))
        return
    # N of an array (its first task's id) names every task, as scancel N does; N_T, or a task's own id, one task
    array = x.HasField("array_job_id") and x.array_job_id == x.id and parse_id(id)[1] is None
    jobs = array_tasks(cli, x) if array else [x]
    if cli.wants_json(json_out):
        print_json({**job_data(x), "tasks": [job_data(t) for t in jobs]} if array else job_data(x))
        return
    machines = Machines.fetch(cli.conn, blocks_of(jobs))
    for k, task in enumerate(jobs):
        if k:
            print()  # scontrol's blank line between records
        nodes = machines.spanned(task.detail.first_ipu, task.ipus) if placed(task) else []
        print_job(task, nodes, machines.count(task.ipus))


def array_tasks(cli, head: j.Job) -> list[j.Job]:
    """Every task of head's array, active or ended, by task id, in two calls however many tasks it has (a GetJob
    each took minutes for 10,000). Active ones first: a task that ends in between is then in the second."""
    jobs = cli.conn.jobs
    active = cli.conn.every_page(jobs.ListJobs, j.ListJobsRequest(ids=[head.id])).jobs
    ended = cli.conn.every_page(jobs.History, j.HistoryRequest(ids=[head.id])).jobs
    tasks = {x.id: x for x in [*active, *ended] if in_array(x, head.id)}
    tasks[head.id] = head
    return sorted(tasks.values(), key=lambda x: x.array_task_id)


def job_data(x: j.Job) -> dict:
    """A job as --json gives it (`vipu show job`, each row of `vipu history`): its fields, with its spec, detail and
    latest run as the mappings they stand for (the typed fields read; the deprecated JSON texts left out). Every job
    has the same keys, a value not known being null (docs/mapping.md, "A job in --json")."""
    data = as_dict(x)
    for deprecated in ("spec_json", "detail_json", "result_json", "result"):
        data.pop(deprecated, None)
    data["spec"] = spec_data(x)
    data["detail"] = to_data(x.detail, nulls=True)
    # a train job's latest run (its result, or how it ended and its losses so far), or a program's (its output, and
    # the steps it reported through vipu.sdk); the steps themselves are `vipu logs`'s
    run = to_data(x.result, nulls=True) if x.HasField("result") else None
    data["training"] = run
    # per IPU of its partition over its last run, as a list (also inside training)
    data["ipu_usage"] = None if run is None else (run.get("result") or run).get("ipu_usage") or []
    return data


def spec_data(x: j.Job) -> dict:
    """The job's spec as its file would hold it (UNLIMITED for a time limit of none: the controller keeps the
    longest it allows, which a resubmit would refuse as a number longer than a year)."""
    spec = to_data(x.spec, nulls=True)
    given = spec.get("time_limit")
    if isinstance(given, (int, float)) and limit(given) == "UNLIMITED":
        spec["time_limit"] = "UNLIMITED"
    return spec


def run_fields(x: j.Job) -> dict[str, object]:
    """scontrol's Command= and WorkDir= of the job (squeue's %o and %Z), and a batch script's files."""
    spec = spec_data(x)
    return dict(batch_fields(x, spec) or workload_fields(spec))


def workload_fields(spec: dict) -> list[tuple[str, object]]:
    """What a job other than a batch script's runs, as scontrol's Command= and WorkDir= (a batch script's are
    batch_fields'): scontrol has no line for a workload, and these held nothing else a line shows."""
    work = spec.get("workload") or {}
    kind = work.get("kind") or "hold"
    if kind == "sleep":
        code, duration = work.get("exit_code") or 0, work["duration"]
        length = clock(duration) if duration == int(duration) else f"{duration:g}s"  # clock() would say 0:00 for 0.1s
        command = f"(sleep {length}{f', then exit {code}' if code else ''})"
    elif kind == "train":
        command = f"(train {train_text(work)})"
    else:
        command = f"({kind}: until cancelled or its time limit)" if kind == "hold" else f"({kind})"
    return [("Command", command), ("WorkDir", spec.get("submit_dir") or "(null)")]


def train_text(work: dict) -> str:
    """A train workload in the words its run's log uses (model, layout), then what else its spec sets."""
    from vipu.jobs.workload_text import layout_text, model_text  # plain Python: not the planner's import cost

    said = [model_text(SimpleNamespace(**work["model"])), layout_text(SimpleNamespace(**work["layout"])),
            f"{work['optimizer']}, {work['steps']} steps, learning rate {work['learning_rate']:g}, seed {work['seed']}"]
    if not work.get("master_weights", True):
        said.append("no fp32 master weights")
    if work.get("synthetic_data") is not None:
        said.append("synthetic data" if work["synthetic_data"] else "data from the host")
    if work.get("execute") is False:
        said.append("modelled: computes nothing")
    return "; ".join(said)


def print_job(x: j.Job, nodes: list[str] = (), count: int = 1) -> None:
    """`nodes`: the IPU-Machines its block spans once placed (the first is what %N in its output patterns stands
    for); `count`: how many its size spans."""
    detail, spec = to_data(x.detail, nulls=True), spec_data(x)
    first = nodes[0] if nodes else None
    start, end = start_of(x), end_of(x)  # as the queue shows them
    program = batch_fields(x, spec, first)  # a batch script's job: Command, WorkDir, StdErr, StdIn, StdOut as scontrol's
    task = [("ArrayJobId", x.array_job_id), ("ArrayTaskId", x.array_task_id)] if x.HasField("array_job_id") else []
    throttle = [("ArrayTaskThrottle", spec["array"].partition("%")[2])] if "%" in (spec.get("array") or "") else []
    fields = [
        ("JobId", job_id(x)), *task, *throttle,  # scontrol's ArrayJobId/ArrayTaskId, for an array's task
        ("JobName", x.name), ("UserId", f"{x.user}({x.uid})" if x.HasField("uid") else x.user),  # scontrol's NAME(UID)
        ("Account", x.account or "(null)"),
        ("QOS", x.qos), ("JobState", x.state),
        ("Reason", reason(x).replace(" ", "_")),  # as scontrol: ReqNodeNotAvail,_UnavailableNodes:ag[05,15]
        ("Held", ("yes (admin)" if x.admin_hold else "yes (user)") if x.held else "no"),
        ("Priority", f"{x.priority:.0f}"), ("IPUs", x.ipus),
        # Slurm's partition is the allocation, as squeue's %P; the job's own V-IPU partition once placed
        ("Partition", spec.get("allocation") or DEFAULT_PARTITION), ("VipuPartition", x.partition or "(null)"),
        ("FirstIPU", "(null)" if detail.get("first_ipu") is None else detail["first_ipu"]),
        ("NodeList", hostlist(nodes) if nodes else "(null)"), ("NumNodes", count),
        *([("BatchHost", first)] if program and first else []),
        ("ReqNodeList", spec.get("nodelist") or "(null)"), ("ExcNodeList", spec.get("exclude") or "(null)"),
        ("TimeLimit", limit(seconds(x.time_limit))),
        ("SubmitTime", stamp(seconds(x.submitted))),
        ("BeginTime", stamp(seconds(x.begin)) if x.HasField("begin") else "Unknown"),
        ("EligibleTime", "Unknown" if (eligible := eligible_of(x)) is None else stamp(eligible)),
        # as scontrol's (and squeue's %S and %e): a pending job's expected start, a running job's limit's end
        ("StartTime", "Unknown" if start is None else stamp(start)),
        ("EstimatedStart", stamp(seconds(x.expected_start)) if x.HasField("expected_start") else "Unknown"),
        ("EndTime", "Unknown" if end is None else stamp(end)),
        ("ExitCode", exit_code(x)), ("Dependency", x.dependency or "(null)"),
        ("Requeue", int(spec.get("requeue", True))), ("Requeues", x.requeue_count), ("Nice", spec.get("nice", 0)),
        *([("Comment", spec["comment"])] if spec.get("comment") is not None else []),  # scontrol's: when given
        *(program or [*workload_fields(spec), ("StdOut", built_in_stdout(x, spec))]),
    ]
    if x.modelled:  # computes nothing: holds its partition for steps x the predicted step time x the time scale
        fields.append(("Modelled", "yes"))
    if detail.get("recovery"):  # what the last controller restart did to its run, and why
        fields.append(("Recovery", detail["recovery"]))
    if detail.get("preemption"):  # which job's QOS took its IPUs last, and what became of the run
        fields.append(("Preemption", detail["preemption"]))
    # what ended its last run from outside (failed IPUs, a forced partition removal); not while a new run goes
    ended_by = detail.get("ended_by") if x.state not in ("RUNNING", "COMPLETING") else None
    if ended_by:
        fields.append(("EndedBy", ended_by))
    for key, value in fields:
        print(f"{key}={value}")
    print("History=" + " ".join(f"{h['state']}@{stamp(h['at'])}" for h in detail["history"]))
    if x.HasField("result"):
        record = to_data(x.result)
        for line in record.get("earlier_runs") or []:  # how the runs before this one ended
            print(f"EarlierRun={line}")
        result = record.get("result")
        losses = result["losses"] if result else record.get("losses")  # a run without a result: its steps so far
        modelled = record.get("modelled")
        if modelled:
            steps = f"/{result['steps_requested']}" if result else " so far"
            print(f"ModelledTimeScale={modelled['time_scale']:g} StepWallTime={modelled['step_wall_s']:.6g}s"
                  f" ModelledSteps={modelled['steps_run']}{steps}")
            print("Losses=none (modelled: computed nothing)")
        elif losses:
            print(f"Losses={' '.join(f'{v:.4f}' for v in losses)}")
        if result and modelled:
            print(f"PredictedStepTime={result['predicted_step_s'] * 1e6:.1f}us"
                  f" Throughput={result['predicted_throughput_samples_per_s']:.0f}samples/s (modelled: nothing"
                  " emulated)")
        elif result:
            print(f"EmulatedStepTime={result['emulated_step_s'] * 1e6:.1f}us"
                  f" Throughput={result['throughput_samples_per_s']:.0f}samples/s"
                  f" PredictedStepTime={result['predicted_step_s'] * 1e6:.1f}us")
        elif record.get("emulated_step_s"):  # a program's steps, reported through vipu.sdk
            print(f"EmulatedStepTime={record['emulated_step_s'] * 1e6:.1f}us Steps={record['steps_reported']}")
        for i, env in enumerate(record.get("environment") or []):  # what each poprun instance saw
            print(f"Instance{i}=" + " ".join(f"{k}={v}" for k, v in env.items()))
        if record.get("failure") and not ended_by:  # a program's run that could not start: what ended it, as
            print(f"EndedBy={record['failure']}")  # a built-in workload's start failure shows (one name for both)
        elif record.get("error") and not program:  # a batch script's "error" is its stderr file
            print(f"Error={record['error']}")
        if record.get("ended"):
            print(f"Ended={record['ended']}")
        usage = (result or record).get("ipu_usage")
        if usage:
            from vipu.jobs.train.results import USAGE_LEGEND, IpuUsage, usage_lines

            print(f"IpuUsage= ({USAGE_LEGEND if result else record['usage_legend']})")
            for line in usage_lines([IpuUsage.model_validate(u) for u in usage]):
                print("  " + line)
