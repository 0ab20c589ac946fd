"""Pipeline schedules: which micro-batch each stage runs forward (F) or backward (B), in what order, and how long
the pipeline takes once every operation's duration is known.

- gpipe: every stage runs F0..F(m-1), then B0..B(m-1): all m micro-batches' activations are held at once. Phased
  execution runs this order whatever the layout's schedule (Layout.order: batch serialisation).
- 1f1b (PipeDream-Flush, Narayanan et al. 2021): stage s runs min(p-1-s, m) warm-up forwards, then alternates one
  forward and one backward, then drains the remaining backwards: at most p - s micro-batches in flight.

Backwards run in micro-batch order in both, so gradients accumulate in the same order and the two schedules give
bit-identical weights: they differ only in time and memory.

Dependencies: F(s, j) needs F(s-1, j) (its input comes from the previous stage); B(s, j) needs B(s+1, j) (its
output gradient) and F(s, j) (its stash; implied by each stage's order). timeline() runs the ops event by event:
an op starts when its stage is free and its input has arrived; the pipeline time is the last op's end. Sends are
part of the sending op's duration (BSP: an IPU computes or exchanges, never both), so an input arrives when the op
that sent it ends.
"""

from __future__ import annotations

from dataclasses import dataclass

Op = tuple[int, str, int]  # (stage, "F" | "B", micro-batch)


def stage_orders(schedule: str, p: int, m: int) -> list[list[tuple[str, int]]]:
    """Each stage's operations in the order it runs them."""
    orders = []
    for s in range(p):
        if schedule == "gpipe":
            orders.append([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
            continue
        warm = min(p - 1 - s, m)
        ops = [("F", j) for j in range(warm)]
        for j in range(m - warm):
            ops += [("F", warm + j), ("B", j)]
        ops += [("B", j) for j in range(m - warm, m)]
        orders.append(ops)
    return orders


def _dependency(op: Op, p: int) -> Op | None:
    s, kind, j = op
    if kind == "F":
        return (s - 1, "F", j) if s > 0 else None
    return (s + 1, "B", j) if s < p - 1 else None


def execution_order(orders: list[list[tuple[str, int]]]) -> list[Op]:
    """A sequential order of every op that respects both the stages' orders and the dependencies: the schedule run
    in unit ticks (each stage runs its next op if its input was produced in an earlier tick), ties by stage."""
    p = len(orders)
    done: set[Op] = set()
    position = [0] * p
    order: list[Op] = []
    while any(position[s] < len(orders[s]) for s in range(p)):
        tick = []
        for s in range(p):
            if position[s] < len(orders[s]):
                op = (s, *orders[s][position[s]])
                dep = _dependency(op, p)
                if dep is None or dep in done:
                    tick.append(op)
        if not tick:
            raise AssertionError(f"pipeline schedule deadlocks at {position}")  # the schedules above never do
        for op in tick:
            position[op[0]] += 1
        done.update(tick)
        order += tick
    return order


@dataclass(frozen=True)
class Timeline:
    pipeline_s: float  # the last op's end
    busy_s: tuple[float, ...]  # per stage: the sum of its ops' durations

    @property
    def bubble_fraction(self) -> float:
        """The stages' average idle share of the pipeline time ((p-1)/(m+p-1) for balanced stages)."""
        if not self.pipeline_s:
            return 0.0
        return 1.0 - sum(self.busy_s) / (len(self.busy_s) * self.pipeline_s)


def timeline(order: list[Op], durations: dict[Op, float], p: int) -> Timeline:
    """Start every op (in `order`, which respects the dependencies) as soon as its stage and input allow."""
    free = [0.0] * p
    busy = [0.0] * p
    end: dict[Op, float] = {}
    for op in order:
        dep = _dependency(op, p)
        start = max(free[op[0]], end[dep] if dep is not None else 0.0)
        end[op] = free[op[0]] = start + durations[op]
        busy[op[0]] += durations[op]
    return Timeline(max(end.values(), default=0.0), tuple(busy))
