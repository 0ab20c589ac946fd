"""squeue's fields over the jobs of `vipu queue`: the -o letters (man squeue), the -O names, and each one's sort key
for -S. IPUs stand for Slurm's CPUs and IPU-Machines for its nodes (nodes.py says the whole mapping)."""

from __future__ import annotations

from typing import Callable

from vipu.cli.queue_rows import JobRow, reason
from vipu.cli.slurm_format import Column
from vipu.cli.slurm_time import clock, limit, stamp
from vipu.client.messages import seconds
from vipu.scheduler.arrays import spans
from vipu.scheduler.job_states import JobState

FULL = frozenset({"full"})  # needs the jobs' specs and details (not a brief listing)
NODES = frozenset({"nodes"})  # needs the IPU-Machines (vipu list ipus)
# needs only the spec's allocation and nice and the detail's first IPU (a brief listing with placement): whole
# specs and details made squeue -l's listing of 10,000 jobs cost the controller 3 to 4 times a brief one
PLACED = frozenset({"placed"})
YEAR = 365 * 86400
_STATE_ORDER = {s.value: n for n, s in enumerate(JobState)}  # squeue sorts states as Slurm numbers them


def when(t: float | None) -> str:
    return stamp(t) if t else "N/A"


def used(seconds: float) -> str:
    return "INVALID" if seconds < 0 or seconds > YEAR else clock(seconds)


def _number(t: float | None) -> float:
    return float("inf") if t is None else t  # unknown last


def _task(row: JobRow) -> str:
    x = row.job
    if row.tasks and len(row.tasks) > 1:
        return spans(sorted(row.tasks))
    return str(x.array_task_id) if x.HasField("array_task_id") else "N/A"


def _id_key(row: JobRow) -> tuple[int, int]:
    x = row.job
    return (x.array_job_id, x.array_task_id) if x.HasField("array_job_id") else (x.id, -1)


def _left(row: JobRow) -> float:
    return max(0.0, seconds(row.job.time_limit) - row.used)


def _run_field(name: str) -> Callable[[JobRow], str]:
    """squeue's %o (Command) and %Z (WorkDir), as show job says them."""
    def field(row: JobRow) -> str:
        from vipu.cli.job_detail import run_fields  # (here: the queue's other columns need none of it)

        return str(run_fields(row.job)[name])

    return field


# man squeue's -o letters; the -O names below name the same columns
LETTERS: dict[str, Column] = {
    "a": Column("ACCOUNT", lambda r: r.job.account or "(null)"),
    "A": Column("JOBID", lambda r: str(r.job.id), lambda r: r.job.id),
    "b": Column("TRES_PER_NODE", lambda r: f"gres/ipu:{min(r.job.ipus, r.machines.per_machine)}",
                needs=NODES),
    "B": Column("EXEC_HOST", lambda r: (r.nodes or ["n/a"])[0], needs=PLACED | NODES),
    "C": Column("CPUS", lambda r: str(r.job.ipus), lambda r: r.job.ipus),
    "D": Column("NODES", lambda r: str(r.node_count), lambda r: r.node_count, needs=PLACED | NODES),
    "e": Column("END_TIME", lambda r: when(r.end), lambda r: _number(r.end)),
    "E": Column("DEPENDENCY", lambda r: r.job.dependency or "(null)"),
    "F": Column("ARRAY_JOB_ID", lambda r: str(r.job.array_job_id if r.job.HasField("array_job_id") else r.job.id),
                lambda r: r.job.array_job_id if r.job.HasField("array_job_id") else r.job.id),
    "i": Column("JOBID", lambda r: r.id_text, _id_key),
    "j": Column("NAME", lambda r: r.job.name),
    "k": Column("COMMENT", lambda r: r.spec.comment if r.spec.HasField("comment") else "(null)", needs=FULL),
    "K": Column("ARRAY_TASK_ID", _task, lambda r: r.job.array_task_id if r.job.HasField("array_task_id") else -1),
    "l": Column("TIME_LIMIT", lambda r: limit(seconds(r.job.time_limit)), lambda r: seconds(r.job.time_limit)),
    "L": Column("TIME_LEFT", lambda r: limit(seconds(r.job.time_limit), lambda _: clock(_left(r))), _left),
    "M": Column("TIME", lambda r: used(r.used), lambda r: r.used),
    "n": Column("REQ_NODES", lambda r: r.spec.nodelist or "", cut=False, needs=FULL),  # sbatch -w
    "N": Column("NODELIST", lambda r: r.node_list(), cut=False, needs=PLACED | NODES),
    "o": Column("COMMAND", _run_field("Command"), cut=False, needs=FULL),  # scontrol's Command=: "(batch script) ARGS"
    "p": Column("PRIORITY", lambda r: f"{r.job.priority / 0xFFFFFFFF:16.14f}", lambda r: r.job.priority,
                needs=FULL),
    "P": Column("PARTITION", lambda r: r.partition, needs=PLACED),
    "q": Column("QOS", lambda r: r.job.qos),
    "Q": Column("PRIORITY", lambda r: f"{r.job.priority:.0f}", lambda r: r.job.priority, needs=FULL),
    "r": Column("REASON", lambda r: reason(r.job)),
    "R": Column("NODELIST(REASON)", lambda r: r.reason_list(), cut=False, needs=PLACED | NODES),
    "S": Column("START_TIME", lambda r: when(r.start), lambda r: _number(r.start)),
    "t": Column("ST", lambda r: r.job.state_code, lambda r: _STATE_ORDER.get(r.job.state, 99)),
    "T": Column("STATE", lambda r: r.job.state, lambda r: _STATE_ORDER.get(r.job.state, 99)),
    "u": Column("USER", lambda r: r.job.user),
    "x": Column("EXC_NODES", lambda r: r.spec.exclude or "", cut=False, needs=FULL),  # sbatch -x
    "V": Column("SUBMIT_TIME", lambda r: when(seconds(r.job.submitted)), lambda r: seconds(r.job.submitted)),
    "y": Column("NICE", lambda r: str(r.spec.nice), lambda r: r.spec.nice, needs=PLACED),
    "Y": Column("SCHEDNODES", lambda r: "(null)", cut=False),
    "Z": Column("WORK_DIR", _run_field("WorkDir"), cut=False, needs=FULL),
}

NAMES: dict[str, Column] = {
    "Account": LETTERS["a"], "ArrayJobID": LETTERS["F"], "ArrayTaskID": LETTERS["K"], "BatchHost": LETTERS["B"],
    "Command": LETTERS["o"], "WorkDir": LETTERS["Z"], "Comment": LETTERS["k"],
    "Dependency": LETTERS["E"], "EndTime": LETTERS["e"], "ReqNodes": LETTERS["n"], "ExcNodes": LETTERS["x"],
    "JobArrayID": LETTERS["i"], "JobID": LETTERS["A"],
    "Name": LETTERS["j"], "Nice": LETTERS["y"], "NodeList": LETTERS["N"], "NumCPUs": LETTERS["C"],
    "IPUs": Column("IPUS", lambda r: str(r.job.ipus), lambda r: r.job.ipus), "NumNodes": LETTERS["D"],
    "Partition": LETTERS["P"], "Priority": LETTERS["p"], "PriorityLong": LETTERS["Q"], "QOS": LETTERS["q"],
    "Reason": LETTERS["r"], "ReasonList": LETTERS["R"], "SchedNodes": LETTERS["Y"], "StartTime": LETTERS["S"],
    "State": LETTERS["T"], "StateCompact": LETTERS["t"], "SubmitTime": LETTERS["V"], "TimeLeft": LETTERS["L"],
    "TimeLimit": LETTERS["l"], "TimeUsed": LETTERS["M"], "tres-per-node": LETTERS["b"], "UserName": LETTERS["u"],
}

# squeue's own formats (man squeue), with IPUs and IPU-Machines as CPUs and nodes
LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
