"""When a layout does not fit: search the layouts of the same partition for ones that do, best throughput first.

The search keeps the model, optimiser, global batch (so the training run means the same thing), second tensor axis
t2, I/O tiles and available memory proportion, and varies t x p x r over the partition's IPUs, the micro-batch size
(powers of two from 1 to MAX_GROWTH x the spec's that divide a replica's share of the batch, the micro-batches
making up the rest), the pipeline schedule (1F1B or GPipe: the same micro-batches and the same accumulated
gradients, in another order; phased execution runs gpipe whatever the spec says, Layout.order, so it is tried with
the spec's schedule only), recomputation, RTS, optimiser offload and phased execution. Bounded: 1,350 layouts for
BERT-Large's micro-batch 8 on 16 IPUs, 2,988 for GPT-3 on 256 with p 4, each a few formulas; only the ones whose
memory fits are timed or mapped onto tiles, and a stage's block costs are counted once per search
(blocks.layout_stage_costs): bench/bench_suggest.py gives the CPU time (about 0.3 s and 1.1 s).

Ranking: highest predicted throughput first, except that among the layouts within NEAR_BEST of the best one, the
micro-batch size nearest the spec's (in factors of two) comes first: the planner's compute efficiency is one figure
for every micro-batch size (assumptions.py), so its small-micro-batch advantage is partly an artefact of the model.
It is a pure function of (workload, pod); the ordering ends in a unique tie-break (fewer memory options, the spec's
schedule, then t, p, micro-batch, the description), so the same inputs always suggest the same layout.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import product

import yaml

from vipu.errors import InvalidArgument
from vipu.jobs.assumptions import DEFAULT, NEAR_BEST, Assumptions
from vipu.jobs.layout import Layout, check_partition
from vipu.jobs.memory_estimate import memory_if_fits
from vipu.jobs.planner import Plan, plan
from vipu.jobs.units import size

MAX_SUGGESTIONS = 3
MAX_GROWTH = 4  # the largest micro-batch tried: this many times the spec's (a larger one needs more memory)
# how rank() orders them, in a few words: the heading `vipu plan` prints above them
ORDER = (f"layouts of the same partition that fit: those within {NEAR_BEST:.0%} of the best predicted throughput"
         " first, the micro-batch nearest the spec's first among them, then by throughput:")


def _powers(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def micro_batch_sizes(asked: int, per_replica: int) -> list[int]:
    """Micro-batch sizes to try: the spec's, then its halves down to 1, then its doubles up to MAX_GROWTH x, each
    dividing a replica's samples per step."""
    halves = [b for b in (asked >> k for k in range(asked.bit_length())) if b >= 1]
    doubles = [asked << k for k in range(1, MAX_GROWTH.bit_length())]
    return [b for b in halves + doubles if per_replica % b == 0]


def candidate_layouts(workload, ipus: int):
    """Layouts of `ipus` IPUs with the workload's global batch that its model accepts."""
    model, lay = workload.model, workload.layout
    batch = lay.global_batch
    other = "gpipe" if lay.schedule == "1f1b" else "1f1b"
    t2 = lay.t2  # a second tensor axis stays as the spec has it; t, p and r share the rest of the IPUs
    for t, p in product(_powers(ipus), _powers(ipus)):
        r = ipus // (t * t2 * p)
        if t * t2 * p * r != ipus or r < 1 or model.shard_problem(t) or p > model.units or batch % r:
            continue
        per_replica = batch // r
        # the spec's layers_per_stage is for its own p; other pipelines split the layers evenly
        stages = lay.layers_per_stage if p == lay.p else None
        for b in micro_batch_sizes(lay.micro_batch, per_replica):
            for recompute, rts, offload, phased in product((False, True), repeat=4):
                if (rts and r == 1) or (phased and offload) or (phased and recompute):
                    continue
                # phased execution runs gpipe order whatever the schedule says: one of the two is enough
                for schedule in (lay.schedule,) if phased else (lay.schedule, other):
                    yield lay.model_copy(update=dict(
                        t=t, p=p, r=r, micro_batch=b, micro_batches=per_replica // b, schedule=schedule,
                        recompute=recompute, rts=rts, offload_optimizer=offload, phased=phased,
                        layers_per_stage=stages))


def _options(layout: Layout) -> int:
    return sum((layout.recompute, layout.rts, layout.offload_optimizer, layout.phased))


def suggest(workload, pod, assumptions: Assumptions = DEFAULT, limit: int = MAX_SUGGESTIONS) -> list[Plan]:
    """Plans of fitting layouts for the workload's partition size, highest predicted throughput first, except that
    among those within NEAR_BEST of the best, the micro-batch size nearest the spec's comes first (see above)."""
    return list(ranked_fitting(workload, pod, assumptions, limit))


@lru_cache(maxsize=32)
def ranked_fitting(workload, pod, assumptions: Assumptions, limit: int | None = None) -> tuple[Plan, ...]:
    """The first `limit` fitting layouts (None: all), in suggest()'s order. Cached per (workload, pod, assumptions,
    limit), all frozen: `vipu submit --test-only` and then the submit search once. Only the `limit` kept: a
    controller keeps the 1 its refusal names, not the hundreds that may fit."""
    fitting = []
    for layout in candidate_layouts(workload, workload.layout.ipus):
        candidate = workload.model_copy(update={"layout": layout})
        mem = memory_if_fits(candidate, pod, assumptions)  # most do not fit: only the ones that do are timed
        if mem is not None:
            fitting.append(plan(candidate, pod, assumptions, mem))
    return tuple(rank(fitting, workload.layout)[:limit])


def rank(fitting: list[Plan], asked: Layout) -> list[Plan]:
    """`fitting` best first: by predicted throughput, except the ones within NEAR_BEST of the best, which come first
    and by how far their micro-batch size is from the spec's (factors of two), then by throughput."""
    if not fitting:
        return []
    near = max(c.throughput for c in fitting) * (1 - NEAR_BEST)

    def key(c: Plan):
        lay = c.layout
        distance = abs(math.log2(lay.micro_batch / asked.micro_batch)) if c.throughput >= near else math.inf
        return (distance, -round(c.throughput, 6), _options(lay), lay.schedule != asked.schedule, lay.t, lay.p,
                -lay.micro_batch, lay.describe())

    return sorted(fitting, key=key)


def schedule_note(found: Layout, asked: Layout | None) -> str:
    """What a change of pipeline order means (nothing when the order is the spec's): the maths stays the same."""
    if asked is None or found.order == asked.order:
        return ""
    return f"; {found.order} instead of {asked.order} keeps the maths: same micro-batches and gradients, reordered"


def suggestion_text(found: Plan, asked: Layout | None = None) -> str:
    """A fitting layout on one line; `asked`, the spec's layout, given: what a change of schedule means. It ends
    with the layout's fields that change, as a spec writes them (walk31: "with RTS" named no field), to set in the
    spec's layout: the rest stays as it is."""
    fields = _fields(found.layout, asked)
    return (f"{found.layout.describe()} ({size(found.memory.total)} per IPU, predicted"
            f" {found.throughput:,.0f} samples/s{schedule_note(found.layout, asked)}; set in workload.layout: {fields})")


def _fields(layout: Layout, asked: Layout | None) -> str:
    """The fields of `layout` that differ from `asked` (or from the defaults), as a YAML flow mapping that pastes
    back into a spec (walk33: Python's None and tuples did not: null, true/false and [3, 7] do)."""
    base = asked.model_dump(mode="json") if asked is not None else Layout.model_construct().model_dump(mode="json")
    given = layout.model_dump(mode="json")
    changed = {k: v for k, v in given.items() if v != base.get(k)}
    return yaml.safe_dump(changed, default_flow_style=True, sort_keys=False, width=math.inf).strip()


def suggestion_json(found: Plan) -> dict:
    """A fitting layout as `vipu plan --json` lists it under "suggestions"."""
    return {"layout": found.layout.model_dump(mode="json"), "description": found.layout.describe(),
            "memory_per_ipu_bytes": math.ceil(found.memory.total), "step_s": found.step_s, "throughput": found.throughput}


def no_layout_fits(result: Plan) -> str:
    return (f"no layout of {result.ipus} IPUs with global batch {result.global_batch} fits; ask for more IPUs"
            " or use a smaller model")


def refusal(result: Plan, found: list[Plan]) -> str:
    """Why `result` (a plan that does not fit) can never run, and the best of `found` (suggest()) that would."""
    advice = f"a layout that fits: {suggestion_text(found[0], result.layout)}" if found else no_layout_fits(result)
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
