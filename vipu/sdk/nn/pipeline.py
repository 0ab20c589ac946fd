"""Pipeline schedules: which micro-batch each stage runs forward (F) or backward (B), and in what order.

- gpipe: every stage runs F0..F(m-1), then B0..B(m-1): all m micro-batches' activations are held at once.
- 1f1b (PipeDream-Flush, Narayanan et al. 2021): stage s runs min(p-1-s, m) warm-up forwards, then alternates one
  forward and one backward, then drains the remaining backwards: at most p - s micro-batches in flight.

Backwards run in micro-batch order in both, so gradients accumulate in the same order and the two schedules give
bit-identical weights: they differ only in time and memory.

Dependencies: F(s, j) needs F(s-1, j) (its input comes from the previous stage); B(s, j) needs B(s+1, j) (its
output gradient) and F(s, j) (its stash; implied by each stage's order). execution_order() gives one process that
plays every stage an order to run them in; on the IPUs each stage's operations then take their virtual time in
that stage's own order (a receive waits for its send), which is what makes the schedule's bubble.
"""

from __future__ import annotations

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


def dependency(op: Op, p: int) -> Op | None:
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
                dep = dependency(op, p)
                if dep is None or dep in done:
                    tick.append(op)
        if not tick:
            raise AssertionError(f"pipeline schedule deadlocks at {position}")  # the schedules above never do
        for op in tick:
            position[op[0]] += 1
        done.update(tick)
        order += tick
    return order
