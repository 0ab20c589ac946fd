"""A line of `vipu queue` and `vipu history`: a job, or the pending tasks of an array that wait alike, with what the
tables show of it. Apart from queue_fields.py (squeue's -o letters and -O names): the default table needs none of
those, and `vipu queue` runs in loops (bench/bench_cli.py)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, NamedTuple

from vipu.client.messages import seconds
from vipu.v1 import job_pb2 as j

if TYPE_CHECKING:
    from vipu.cli.nodes import Machines
    from vipu.v1 import job_spec_pb2


# What Slurm shows as an ended job's reason: the state_reason job_mgr.c sets when a job ends (FAIL_EXIT_CODE,
# FAIL_TIMEOUT, FAIL_DOWN_NODE; FAIL_SIGNAL: reason()), by its names in src/common/job_state_reason.c; other ends
# keep None
ENDED_REASONS = {"FAILED": "NonZeroExitCode", "TIMEOUT": "TimeLimit", "NODE_FAIL": "NodeDown"}


def reason(x: j.Job, brief: bool = False) -> str:
    """squeue's %r, sacct's Reason and scontrol's Reason=: why a pending job waits, why an ended one ended. A program a
    signal ended: RaisedSignal:11(Segmentation fault), as _job_complete (job_mgr.c) words its state_desc, which squeue
    and scontrol show; `brief`, the reason's name alone (FAIL_SIGNAL's RaisedSignal), as sacct and squeue --json's
    state_reason show it."""
    if not x.reason and x.state == "FAILED" and x.signal:
        return "RaisedSignal" if brief else f"RaisedSignal:{x.signal}({_signal_text(x.signal)})"
    return x.reason or ENDED_REASONS.get(x.state, "None")


def _signal_text(number: int) -> str:
    """strsignal(3)'s words for a signal, as Slurm prints them."""
    return signal.strsignal(number) or f"Unknown signal {number}"


def job_id(x: j.Job | j.PriorityFactors) -> str:
    """As squeue shows a job: N, or N_T for task T of array job N."""
    if x.HasField("array_job_id"):
        return f"{x.array_job_id}_{x.array_task_id}"
    return str(x.id if isinstance(x, j.Job) else x.job_id)


def start_of(x: j.Job) -> float | None:
    """Its start, or for a pending job the estimated one (squeue's START_TIME, scontrol's StartTime)."""
    if x.HasField("started"):
        return seconds(x.started)
    return seconds(x.expected_start) if x.HasField("expected_start") else None


def eligible_of(x: j.Job) -> float | None:
    """When it became eligible (scontrol's EligibleTime, sacct's Eligible); None (Unknown) while it is not: held,
    waiting on its dependency or for its begin time."""
    if not x.HasField("eligible") or (x.state == "PENDING" and (
            x.held or x.reason.startswith("Dependency") or x.reason == "BeginTime")):
        return None
    return seconds(x.eligible)


def end_of(x: j.Job) -> float | None:
    """Its end, or the end its time limit sets (squeue's END_TIME, scontrol's EndTime)."""
    if x.HasField("ended"):
        return seconds(x.ended)
    start = start_of(x)
    return None if start is None else start + seconds(x.time_limit)


class JobRow(NamedTuple):
    """A line of the queue or the history: a job (a run of it, in history -D), or the pending tasks of an array
    that wait alike (`tasks`, squeue's 26_[1-3]). A NamedTuple, not a dataclass: made in a fraction of the time, at
    every call of the CLI."""

    job: j.Job
    now: float
    machines: Machines | None = None
    tasks: list[int] | None = None

    @property
    def spec(self) -> job_spec_pb2.JobSpec:
        """Its spec, typed: empty in a brief listing (each field then its default)."""
        return self.job.spec

    @property
    def running(self) -> bool:
        return self.job.state_code in ("R", "CG")

    @property
    def used(self) -> float:
        x = self.job
        if not x.HasField("started") or x.state_code == "PD":
            return 0.0
        # (a CG job's run has ended: squeue's TIME stops at its end, as Slurm's job_time_used reads end_time)
        return (self.now if x.state_code == "R" or not x.HasField("ended") else seconds(x.ended)) - seconds(x.started)

    @property
    def start(self) -> float | None:
        return start_of(self.job)

    @property
    def end(self) -> float | None:
        return end_of(self.job)

    @property
    def id_text(self) -> str:
        if self.tasks and len(self.tasks) > 1:
            from vipu.scheduler.arrays import spans

            limit = self.spec.array.partition("%")[2]  # as squeue shows a throttled array: 26_[3-99%10]
            return f"{self.job.array_job_id}_[{spans(sorted(self.tasks))}{'%' + limit if limit else ''}]"
        return job_id(self.job)

    @property
    def partition(self) -> str:
        from vipu.cli.nodes import DEFAULT_PARTITION

        return self.spec.allocation or DEFAULT_PARTITION

    @property
    def nodes(self) -> list[str]:
        if self.job.state_code == "PD" or self.machines is None:  # before its detail is read: most rows are pending
            return []
        detail = self.job.detail
        return self.machines.spanned(detail.first_ipu, self.job.ipus) if detail.HasField("first_ipu") else []

    @property
    def node_count(self) -> int:
        return len(self.nodes) or (self.machines.count(self.job.ipus) if self.machines else 0)

    def node_list(self) -> str:
        from vipu.partition.node_names import hostlist

        return hostlist(self.nodes)

    def reason_list(self) -> str:
        """squeue's NODELIST(REASON): the reason in parentheses for a job pending, failed or timed out and not
        completing (squeue's print.c; its stage-out, OOM and deadline states vipu has not), else its nodes."""
        if self.job.state_code in ("PD", "F", "TO"):  # CG is its own state here: a completing one shows its nodes
            return f"({reason(self.job)})"
        return self.node_list()
