"""What a training run reports: one StepReport per optimiser step, and the TrainingResult of the run. A modelled
run (execute: false) computes nothing: each of its steps is the planner's predicted step (ModelledSteps).

Times are emulated (virtual) seconds on the real Pod's figures unless named wall_s. A step's emulated time splits
exactly into the planner's parts, with its field names (parts.PARTS): compute_s + bubble_s + tensor_parallel_s +
pipeline_send_s + batch_norm_s (0: the emulator's models have no batch norm) + sync_s + data_parallel_s +
streaming_s + host_io_s, measured on the critical stage (the busiest stage of the slowest replica): bubble_s is the time
that stage waits inside the pipeline, and bubble_fraction the stages' average idle share of the pipeline time
((p-1)/(m+p-1) when the stages are balanced).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from vipu.jobs.parts import PARTS
from vipu.jobs.units import size


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class IpuReport(_Frozen):
    compute_s: float  # this IPU's own compute in the step (its FLOPs at the calibrated rate)
    utilisation: float  # compute_s / the step's emulated time
    # SRAM at its peak (holdings.py): weights + gradient accumulator + optimiser state + activations; phased, the
    # resident block's weights and accumulators + its activations
    memory_bytes: int
    activation_bytes: int  # the activations of that peak (1f1b: up to p - s micro-batches' worth)
    # what the IPU keeps in Streaming Memory (offloaded optimiser state; phased: also the weights and gradient
    # accumulators, with RTS its replica's shard, and its share of the stashed block inputs: memory_estimate.py's
    # streaming)
    streaming_bytes: int = 0


class StepReport(_Frozen):
    step: int  # from 0
    loss: float | None  # mean loss over the global batch, before this step's update; None: a modelled step
    # computed nothing, so it has no loss (no number is made up for it)
    emulated_step_s: float
    compute_s: float  # BSP compute sets (incl. their syncs) of the critical stage
    comm_s: float  # tensor_parallel_s + pipeline_send_s + data_parallel_s
    tensor_parallel_s: float
    pipeline_send_s: float
    sync_s: float = 0.0  # partition-wide syncs before the critical stage's collectives and the gradient allreduce
    data_parallel_s: float
    bubble_s: float
    bubble_fraction: float
    streaming_s: float = 0.0  # the step's loads and stores of Streaming Memory (its busiest machine)
    host_io_s: float = 0.0  # the step's inputs from the hosts (timing.host_io_s): executed runs draw their samples
    # on the IPUs (synthetic data), so only a modelled step has any
    batch_norm_s: float = 0.0  # distributed batch-norm statistics: none of the models the emulator runs has them,
    # but the planner's split has the part, and a step reports every part of it (parts.PARTS)
    bytes_per_link_type: dict[str, int]  # payload bytes sent, over all collectives of the step
    bytes_per_kind: dict[str, int]  # tensor_parallel, pipeline, data_parallel
    collectives: int
    ipus: dict[int, IpuReport]
    wall_s: float
    modelled: bool = False  # the planner's prediction of the step, nothing computed (modelled.py): its times,
    # utilisation and memory are the plan's, it has no loss and moved no bytes


class IpuUsage(_Frozen):
    """One IPU of the job's partition over the whole run: what the run's StepReport.ipus add up to. Kept with the
    job, unlike the machines' gauges (vipu_ipu_utilization_ratio, vipu_ipu_memory_used_bytes), which drop back
    to 0 once the job has ended."""

    ipu: int  # Pod IPU number
    machine: int
    utilisation: float  # its compute over the steps run / their emulated time: its share of the run doing work
    sram_peak_bytes: int  # the most tile SRAM any step needed: weights, gradients, optimiser state, stashed activations
    activation_peak_bytes: int  # the activations part of that peak
    streaming_peak_bytes: int = 0  # the most Streaming Memory any step kept for it (0: all in SRAM)


def step_kind(modelled: object) -> str:
    """What a run's step times are: emulated (computed on the emulated IPUs), or modelled (the planner's
    prediction: nothing ran)."""
    return "modelled" if modelled else "emulated"


def step_line(r: StepReport) -> str:
    """`vipu logs`' line for a step: its loss, then its emulated time split into `vipu plan`'s parts, with the
    plan's names in the plan's order (parts.PARTS), so the two read side by side; then what the line has always
    ended with (all communication, the bubble's share of the pipeline) and the host's wall-clock."""
    parts = ", ".join(f"{label} {getattr(r, field) * 1e6:,.1f} us" for label, field in PARTS)
    loss = "none (modelled)" if r.loss is None else f"{r.loss:.6f}"
    return (f"step {r.step:>4}  loss {loss}  {step_kind(r.modelled)} step {r.emulated_step_s * 1e6:,.1f} us  ({parts};"
            f" comm {r.comm_s * 1e6:,.1f} us, bubble {r.bubble_fraction:.1%})  wall {r.wall_s * 1e3:,.1f} ms")


def modelled_line(m: ModelledSteps, steps: int | None) -> str:
    """`vipu logs`' first line for a modelled run: what it is, and how long it holds its partition."""
    count, hold = (f"{steps:,}", f" = {steps * m.step_wall_s:,.3f} s") if steps is not None else ("its", "")
    return (f"modelled run (execute: false): computes nothing; holds its partition for {count} steps x the"
            f" predicted step time {m.step.emulated_step_s:,.6g} s x time scale {m.time_scale:g}{hold} of"
            " wall-clock; each step reports the planner's prediction, with no loss")


def ipu_usage(reports: list[StepReport], ipus_per_machine: int) -> list[IpuUsage]:
    """Each IPU's usage over the steps run, in IPU order (empty when no step ran)."""
    total_s = sum(r.emulated_step_s for r in reports)
    out = []
    for ipu in sorted({ipu for r in reports for ipu in r.ipus}):
        mine = [r.ipus[ipu] for r in reports if ipu in r.ipus]
        out.append(IpuUsage(
            ipu=ipu, machine=ipu // ipus_per_machine,
            utilisation=sum(x.compute_s for x in mine) / total_s if total_s else 0.0,
            sram_peak_bytes=max(x.memory_bytes for x in mine),
            activation_peak_bytes=max(x.activation_bytes for x in mine),
            streaming_peak_bytes=max(x.streaming_bytes for x in mine)))
    return out


# what usage_lines's columns mean, printed above them. UTIL is the IPU's own work: the step lines' "compute" is the
# critical stage's compute sets, which also count the on-chip sync ending each
USAGE_LEGEND = ("UTIL: the IPU's tile compute (its FLOPs at the calibrated rate, without the syncs) / emulated step"
                " time; SRAM PEAK: the most any step needed, in the model's dtype, of which ACTIVATIONS stashed for"
                " backward")


def usage_lines(usage: list[IpuUsage]) -> list[str]:
    """A compact table of usage, for `vipu logs` and `vipu show job`; the Streaming Memory column only if any
    IPU used it."""
    if not usage:
        return []
    streaming = any(u.streaming_peak_bytes for u in usage)
    header = f"{'IPU':>5} {'MACHINE':>7} {'UTIL':>7} {'SRAM PEAK':>10} {'ACTIVATIONS':>11}"
    lines = [header + (f" {'STREAMING':>10}" if streaming else "")]
    for u in usage:
        line = (f"{u.ipu:>5} {u.machine:>7} {u.utilisation:>7.2%} {size(u.sram_peak_bytes):>10}"
                f" {size(u.activation_peak_bytes):>11}")
        lines.append(line + (f" {size(u.streaming_peak_bytes):>10}" if streaming else ""))
    return lines


class InstanceRun(_Frozen):
    """One poprun instance of the run, as its environment placed it (poprun.py)."""

    index: int  # popdist.getInstanceIndex(): POPDIST_REPLICA_INDEX_OFFSET / POPDIST_NUM_LOCAL_REPLICAS
    partition: str  # IPUOF_VIPU_API_PARTITION_ID
    gcd: int  # IPUOF_VIPU_API_GCD_ID
    replicas: list[int]  # the replicas it ran: POPDIST_REPLICA_INDEX_OFFSET + 0 .. POPDIST_NUM_LOCAL_REPLICAS - 1
    ipus: list[int]  # their IPUs (Pod IPU numbers)


class ModelledSteps(_Frozen):
    """The steps of a modelled run (execute: false), which computed nothing: each is the planner's predicted step,
    held on the partition for its predicted time x time_scale of wall-clock. Kept once, not once per step: a
    modelled job may run many more steps than a computed one, on up to a Pod's IPUs."""

    time_scale: float  # the controller's --modelled-time-scale when the run started
    step_wall_s: float  # wall-clock seconds each step holds the partition: the predicted step time x time_scale
    steps_run: int  # the steps whose time has passed (so far, while the run goes)
    step: StepReport  # the predicted step (numbered 0); step i reports it numbered i

    def reports(self) -> "RepeatedSteps":
        return RepeatedSteps(self.step, self.steps_run)


class RepeatedSteps(Sequence[StepReport]):
    """`count` reports of `step`, numbered from 0, made when read: a modelled run's steps, as a computed run's
    list of them reads."""

    def __init__(self, step: StepReport, count: int):
        self.step, self.count = step, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.count))]
        number = index + self.count if index < 0 else index
        if not 0 <= number < self.count:
            raise IndexError(f"step {index} of {self.count}")
        return self.step.model_copy(update={"step": number})


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
    ipu_usage: list[IpuUsage] = []  # per IPU of the partition, over the steps run (empty in results stored before)
    # a modelled run (execute: false): it computed nothing, so it has no losses and `reports` is empty; its steps
    # are these (the emulated figures above are then the prediction's). None: the run computed its steps
    modelled: ModelledSteps | None = None

    @property
    def steps_run(self) -> int:
        return self.modelled.steps_run if self.modelled else len(self.losses)

    def step_reports(self) -> Sequence[StepReport]:
        """Every step the run reported, computed or modelled."""
        return self.modelled.reports() if self.modelled else self.reports
