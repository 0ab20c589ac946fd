"""The BSP cost rules: the virtual time of a step on a machine's IPUs, phase by phase.

The training driver prices each compute set with run() (vipu/jobs/train/work.py) and then charges the step's
totals to the machine actors, whose Machine.run_step runs them through run() again to fill their counters
(vipu/jobs/train/machine_charges.py): the actors keep the account, the driver is the timer.

An IPU runs bulk-synchronously (hardware.md): every compute set is compute (each tile works on its own SRAM), a
sync, then exchange (tiles swap data on-chip and IPUs over IPU-Links). A tile cannot start the next phase before
every tile has finished this one, so a compute set lasts max(compute) + sync + max(exchange) over all the IPUs taking
part, and a step is the sum over its compute sets. What each phase costs one IPU (its busiest tile's cycles, the
sync, its exchange) is the hardware's figure: vipu/hardware/bsp_cost.py states the cost model.

Per IPU, compute_s + sync_s + exchange_s = step_s: sync_s includes the time an IPU waits at the barrier for slower
ones (what Poplar's profiler shows), so utilisation = compute_s / step_s says how much of the step did useful work.
Virtual time only: nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, ValidationError

from vipu.errors import InvalidArgument
from vipu.hardware import bsp_cost
from vipu.hardware.figures import IpuSpec, LinkSpec
from vipu.validation import describe


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IpuWork(_Frozen):
    """One IPU's share of a compute set. Give per-tile `flops` or per-tile `cycles`: a number (the same on each of
    the first `tiles` tiles, default all) or one value per tile."""

    flops: NonNegativeFloat | list[NonNegativeFloat] = 0.0
    cycles: NonNegativeFloat | list[NonNegativeFloat] | None = None
    tiles: NonNegativeInt | None = None
    exchange_bytes: NonNegativeInt = Field(0, description="bytes moved between this IPU's tiles in the exchange")
    sends: dict[int, NonNegativeInt] = Field(
        default_factory=dict, description="peer IPU (global number) -> bytes sent to it over IPU-Links"
    )


class ComputeSet(_Frozen):
    name: str = "cs"
    dtype: Literal["fp16", "fp32"] = "fp16"
    ipus: dict[int, IpuWork] = Field(default_factory=dict, description="IPU -> its work; absent IPUs only sync")


class Step(_Frozen):
    """A step: compute sets run in order by every IPU in `ipus` (default: each IPU any compute set names)."""

    name: str = "step"
    compute_sets: list[ComputeSet] = Field(min_length=1)
    ipus: list[int] | None = None

    @classmethod
    def parse(cls, data: object) -> Step:
        """A step from plain data (JSON, a job spec), with errors as InvalidArgument naming each field."""
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise InvalidArgument(describe(e, "BSP step")) from None

    def participants(self) -> list[int]:
        if self.ipus is not None:
            return sorted(set(self.ipus))
        return sorted({ipu for cs in self.compute_sets for ipu in cs.ipus})


@dataclass(frozen=True)
class PhaseTimes:
    compute_s: float = 0.0
    sync_s: float = 0.0  # the sync itself plus waiting for slower IPUs
    exchange_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.compute_s + self.sync_s + self.exchange_s

    def __add__(self, other: PhaseTimes) -> PhaseTimes:
        return PhaseTimes(self.compute_s + other.compute_s, self.sync_s + other.sync_s,
                          self.exchange_s + other.exchange_s)


@dataclass(frozen=True)
class SetTimes:
    """One compute set: the slowest IPU's compute and exchange, and the sync between them."""

    name: str
    compute_s: float
    sync_s: float
    exchange_s: float

    @property
    def total_s(self) -> float:
        return self.compute_s + self.sync_s + self.exchange_s


@dataclass(frozen=True)
class StepTimes:
    step_s: float
    ipus: dict[int, PhaseTimes]
    sets: tuple[SetTimes, ...]

    @property
    def utilisation(self) -> dict[int, float]:
        return {ipu: (t.compute_s / self.step_s if self.step_s else 0.0) for ipu, t in self.ipus.items()}


def tile_cycles(work: IpuWork, dtype: str, ipu: IpuSpec) -> int:
    """The busiest tile's cycles for this IPU's work."""
    values, per = (work.flops, ipu.flops_per_tile_cycle(dtype)) if work.cycles is None else (work.cycles, 1)
    return bsp_cost.busiest_tile_cycles(values, work.tiles, per, ipu)


def compute_only(ipu: IpuSpec, link: LinkSpec, dtype: str, flops: Mapping[int, float]) -> StepTimes:
    """What run() gives for one compute set in which IPU k does flops[k] FLOPs on each of its tiles and exchanges
    nothing, from plain numbers (no models built, the same arithmetic in the same order): the engine prices every
    compute set of a training step with it (jobs/train/work.py)."""
    per = ipu.flops_per_tile_cycle(dtype)
    who = sorted(flops)
    compute = {k: bsp_cost.busiest_tile_cycles(flops[k], None, per, ipu) / ipu.clock_hz for k in who}
    exchange = bsp_cost.exchange_s(0, {}, ipu, link)
    times = SetTimes("cs", max(compute.values(), default=0.0), bsp_cost.sync_s(ipu, link, spans_chips=False),
                     exchange)
    zero = PhaseTimes()
    totals = {k: zero + PhaseTimes(compute[k], times.total_s - compute[k] - exchange, exchange) for k in who}
    return StepTimes(sum((times.total_s,)), totals, (times,))


def run(step: Step, ipu: IpuSpec, link: LinkSpec) -> StepTimes:
    """The virtual time of `step`, per compute set and per IPU (keys as the step gives them)."""
    who = step.participants()
    totals = {k: PhaseTimes() for k in who}
    sets = []
    idle = IpuWork()
    for cs in step.compute_sets:
        stray = sorted(set(cs.ipus) - set(who))
        if stray:
            raise InvalidArgument(f"compute set {cs.name!r} gives work to IPUs {stray}, which are not in the step's"
                                  f" ipus {who}; add them to ipus or drop their work")
        shares = {k: cs.ipus.get(k, idle) for k in who}
        compute = {k: tile_cycles(shares[k], cs.dtype, ipu) / ipu.clock_hz for k in who}
        exchange = {k: bsp_cost.exchange_s(shares[k].exchange_bytes, shares[k].sends, ipu, link) for k in who}
        sync = bsp_cost.sync_s(ipu, link, spans_chips=any(work.sends for work in cs.ipus.values()))
        times = SetTimes(cs.name, max(compute.values(), default=0.0), sync, max(exchange.values(), default=0.0))
        sets.append(times)
        for k in who:
            waited = times.total_s - compute[k] - exchange[k]  # includes the sync itself
            totals[k] = totals[k] + PhaseTimes(compute[k], waited, exchange[k])
    return StepTimes(sum(s.total_s for s in sets), totals, tuple(sets))
