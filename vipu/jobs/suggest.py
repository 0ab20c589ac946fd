"""When a layout does not fit: search the layouts of the same partition for ones that do, best throughput first.

The search keeps the model, optimiser and global batch (so the training run means the same thing) and varies
t x p x r over the partition's IPUs, the micro-batch size (halving it, more micro-batches), recomputation, RTS,
optimiser offload and phased execution. It is a pure function of (workload, pod); the ordering ends in a unique
tie-break (fewer memory options, then t, p, micro-batch), so the same inputs always suggest the same layout.
"""

from __future__ import annotations

from itertools import product

from vipu.errors import InvalidArgument
from vipu.jobs.assumptions import DEFAULT, Assumptions
from vipu.jobs.layout import Layout, check_partition
from vipu.jobs.planner import Plan, plan
from vipu.jobs.units import size

MAX_SUGGESTIONS = 3


def _powers(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def candidate_layouts(workload, ipus: int):
    """Layouts of `ipus` IPUs with the workload's global batch that its model accepts."""
    model, lay = workload.model, workload.layout
    batch = lay.global_batch
    for t, p in product(_powers(ipus), _powers(ipus)):
        r = ipus // (t * p)
        if t * p * r != ipus or r < 1 or model.shard_problem(t) or p > model.units or batch % r:
            continue
        per_replica = batch // r
        b = lay.micro_batch
        while b >= 1:
            if per_replica % b == 0:
                for recompute, rts, offload, phased in product((False, True), repeat=4):
                    if (rts and r == 1) or (phased and offload) or (phased and recompute):
                        continue
                    yield lay.model_copy(update=dict(
                        t=t, p=p, r=r, micro_batch=b, micro_batches=per_replica // b, recompute=recompute,
                        rts=rts, offload_optimizer=offload, phased=phased))
            b //= 2


def _options(layout: Layout) -> int:
    return sum((layout.recompute, layout.rts, layout.offload_optimizer, layout.phased))


def suggest(workload, pod, assumptions: Assumptions = DEFAULT, limit: int = MAX_SUGGESTIONS) -> list[Plan]:
    """Plans of fitting layouts for the workload's partition size, highest predicted throughput first."""
    fitting = []
    for layout in candidate_layouts(workload, workload.layout.ipus):
        candidate = plan(workload.model_copy(update={"layout": layout}), pod, assumptions)
        if candidate.fits:
            fitting.append(candidate)
    fitting.sort(key=lambda c: (-round(c.throughput, 6), _options(c.layout), c.layout.t, c.layout.p,
                                -c.layout.micro_batch, c.layout.describe()))
    return fitting[:limit]


def suggestion_text(found: Plan) -> str:
    return (f"{found.layout.describe()} ({size(found.memory.total)} per IPU, predicted"
            f" {found.throughput:,.0f} samples/s)")


def suggestion_json(found: Plan) -> dict:
    """A fitting layout as `vipu plan --json` lists it under "suggestions"."""
    return {"layout": found.layout.model_dump(mode="json"), "description": found.layout.describe(),
            "memory_per_ipu_bytes": found.memory.total, "step_s": found.step_s, "throughput": found.throughput}


def no_layout_fits(result: Plan) -> str:
    return (f"no layout of {result.ipus} IPUs with global batch {result.global_batch} fits; ask for more IPUs"
            " or use a smaller model")


def refusal(result: Plan, found: list[Plan]) -> str:
    """Why `result` (a plan that does not fit) can never run, and the best of `found` (suggest()) that would."""
    advice = f"a layout that fits: {suggestion_text(found[0])}" if found else no_layout_fits(result)
    return f"workload.layout does not fit {result.pod}: {'; '.join(result.problems())}; {advice}"


def check_fits(workload, pod, ipus: int | None = None, assumptions: Assumptions = DEFAULT) -> Plan:
    """The plan of a workload that fits; else InvalidArgument with the numbers and a layout that fits, if any
    (the message `vipu plan` prints on stderr for the same workload).

    `ipus`, when given (the job spec's), must equal t x p x r and be a partition size the Pod can give."""
    if ipus is not None:
        check_partition(workload.layout, ipus, pod)
    result = plan(workload, pod, assumptions)
    if result.fits:
        return result
    raise InvalidArgument(refusal(result, suggest(workload, pod, assumptions, limit=1)))
