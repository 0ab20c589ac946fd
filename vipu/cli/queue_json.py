"""`vipu queue --json` as squeue --json writes it (Slurm's data_parser, v0.0.4x): an object with the jobs, a meta
block, errors and warnings; numbers Slurm may leave unset as {"set", "infinite", "number"}; times as Unix seconds;
a job's state as a list; submit_line as v0.0.44 (Slurm 25.05) adds it. A few fields of vipu's own follow Slurm's
(ipus, vipu_partition, modelled, time_limit_s).
"""

from __future__ import annotations

import math
import signal
import sys

from vipu import __version__
from vipu.cli.queue_fields import JobRow, reason
from vipu.cli.queue_rows import eligible_of
from vipu.cli.slurm_time import limit
from vipu.client.messages import seconds


def number(value: float | None) -> dict:
    """Slurm's number that may be unset: whole numbers, as its JSON has them."""
    return {"infinite": False, "number": 0 if value is None else int(value), "set": value is not None}


NO_LIMIT = {"infinite": True, "number": 0, "set": True}  # Slurm's JSON for INFINITE


def _exit_code(x) -> dict:
    if x.state in ("PENDING", "RUNNING", "COMPLETING"):
        return {"return_code": number(None), "signal": {"id": number(None), "name": ""}, "status": ["PENDING"]}
    code = x.exit_code if x.HasField("exit_code") else 0
    status = "SIGNALED" if x.signal else "SUCCESS" if code == 0 else "ERROR"
    return {"return_code": number(code),
            "signal": {"id": number(x.signal or None), "name": _signal_name(x.signal)},
            "status": [status]}


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name if number else ""
    except ValueError:  # a real-time signal: no name
        return ""


def job_entry(row: JobRow) -> dict:
    """A job as squeue --json has it, its keys in order (print_json(ordered=True))."""
    x = row.job
    array = x.HasField("array_job_id")
    nodes = row.node_count
    tres = f"cpu={x.ipus},node={nodes},gres/ipu={x.ipus}"
    named, said = reason(x, brief=True), reason(x)
    return {  # in name order; ipus, modelled, time_limit_s and vipu_partition are vipu's own
        "account": x.account,
        "array_job_id": number(x.array_job_id if array else None),
        "array_task_id": number(x.array_task_id if array else None),
        "comment": row.spec.comment,  # sbatch --comment; "" without one, as Slurm's JSON gives an unset string
        "cpus": number(x.ipus),
        "dependency": x.dependency,
        "eligible_time": number(eligible_of(x)),
        "end_time": number(row.end),
        "excluded_nodes": row.spec.exclude,  # sbatch -x
        "exit_code": _exit_code(x),
        "hold": x.held,
        "ipus": x.ipus,
        "job_id": x.id,
        "job_state": [x.state],
        "modelled": x.modelled,
        "name": x.name,
        "nice": row.spec.nice,
        "node_count": number(nodes),
        "nodes": row.node_list(),
        "partition": row.partition,
        "priority": number(round(x.priority)),
        "qos": x.qos,
        "requeue": row.spec.requeue if row.spec.HasField("requeue") else True,
        "required_nodes": row.spec.nodelist,  # sbatch -w
        "restart_cnt": x.requeue_count,
        "start_time": number(row.start),
        # squeue's: the reason's name, and its whole text when it says more (ReqNodeNotAvail, UnavailableNodes:...;
        # RaisedSignal:11(Segmentation fault))
        "state_description": said if "," in said or said != named else "",
        "state_reason": named.partition(",")[0],
        "submit_line": row.spec.submit_line,  # "" for a job submitted through the API without one
        "submit_time": number(seconds(x.submitted)),
        "time_limit": NO_LIMIT if limit(seconds(x.time_limit)) == "UNLIMITED"
        else number(math.ceil(seconds(x.time_limit) / 60)),  # minutes, rounded up as Slurm rounds MM:SS
        "time_limit_s": seconds(x.time_limit),
        "tres_alloc_str": tres if row.running else "",
        "tres_req_str": tres,
        "user_id": x.uid if x.HasField("uid") else None,  # null: not known (stored before schema 6, no account)
        "user_name": x.user,
        "vipu_partition": x.partition,
    }


def document(rows: list[JobRow], now: float, user: str, cluster: str, warnings: list[str]) -> dict:
    major, minor, micro = (__version__.split(".") + ["0", "0"])[:3]
    return {  # keys in order, as print_json(ordered=True) needs them
        "errors": [],
        "jobs": [job_entry(r) for r in rows],
        "last_backfill": number(None),
        "last_update": number(now),
        "meta": {
            "client": {"group": "", "source": "vipu", "user": user},
            "command": sys.argv[1:],
            "plugin": {"accounting_storage": "", "data_parser": "vipu", "name": "", "type": ""},
            "slurm": {"cluster": cluster, "release": f"vipu-sim {__version__}",
                      "version": {"major": major, "micro": micro, "minor": minor}},
        },
        "warnings": [{"description": w, "source": "vipu queue"} for w in warnings],
    }
