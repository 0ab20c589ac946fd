"""What a training run reports: one StepReport per optimiser step, and the TrainingResult of the run.

Times are emulated (virtual) seconds on the real Pod's figures unless named wall_s. A step's emulated time splits
exactly into compute_s + tensor_parallel_s + pipeline_send_s + sync_s + bubble_s + data_parallel_s, measured on the
critical stage (the busiest stage of the slowest replica): bubble_s is the time that stage waits inside the
pipeline, and bubble_fraction the stages' average idle share of the pipeline time ((p-1)/(m+p-1) when the stages
are balanced).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class IpuReport(_Frozen):
    compute_s: float  # this IPU's own compute in the step (its FLOPs at the calibrated rate)
    utilisation: float  # compute_s / the step's emulated time
    memory_bytes: int  # weights + gradient accumulator + optimiser state + peak stashed activations
    activation_bytes: int  # the peak of activations stashed for backward (1f1b: up to p - s micro-batches)


class StepReport(_Frozen):
    step: int  # from 0
    loss: float  # mean loss over the global batch, before this step's update
    emulated_step_s: float
    compute_s: float  # BSP compute sets (incl. their syncs) of the critical stage
    comm_s: float  # tensor_parallel_s + pipeline_send_s + data_parallel_s
    tensor_parallel_s: float
    pipeline_send_s: float
    sync_s: float = 0.0  # partition-wide syncs before the critical stage's collectives and the gradient allreduce
    data_parallel_s: float
    bubble_s: float
    bubble_fraction: float
    bytes_per_link_type: dict[str, int]  # payload bytes sent, over all collectives of the step
    bytes_per_kind: dict[str, int]  # tensor_parallel, pipeline, data_parallel
    collectives: int
    ipus: dict[int, IpuReport]
    wall_s: float


class InstanceRun(_Frozen):
    """One poprun instance of the run, as its environment placed it (poprun.py)."""

    index: int  # popdist.getInstanceIndex(): POPDIST_REPLICA_INDEX_OFFSET / POPDIST_NUM_LOCAL_REPLICAS
    partition: str  # IPUOF_VIPU_API_PARTITION_ID
    gcd: int  # IPUOF_VIPU_API_GCD_ID
    replicas: list[int]  # the replicas it ran: POPDIST_REPLICA_INDEX_OFFSET + 0 .. POPDIST_NUM_LOCAL_REPLICAS - 1
    ipus: list[int]  # their IPUs (Pod IPU numbers)


class TrainingResult(_Frozen):
    model: str
    layout: str
    pod: str
    first_ipu: int
    ipus: int
    optimizer: str
    global_batch: int
    steps_requested: int
    stopped: bool  # should_stop() ended the run early
    losses: list[float]
    reports: list[StepReport]
    emulated_step_s: float  # mean over the steps run
    throughput_samples_per_s: float  # global_batch / emulated_step_s
    predicted_step_s: float  # the planner's prediction for the same workload: what `vipu plan` prints
    predicted_throughput_samples_per_s: float
    predicted_parts: dict[str, float]  # the planner's split of its predicted step
    emulated_parts: dict[str, float]  # the same split, emulated (mean over the steps run)
    bytes_per_link_type: dict[str, int]  # over the whole run
    wall_s: float
    instances: list[InstanceRun] = []  # the poprun instances and what each ran (empty in results stored before)

    @property
    def steps_run(self) -> int:
        return len(self.losses)
