"""Slurm's `--array` syntax: which task indices an array job has and how many may run at once.

Why the size is computed before anything is expanded: "0-1000000000" must be refused in microseconds with a message,
not after building a billion-element list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_ARRAY_TASKS = 10_000  # Slurm's MaxArraySize is 1001 by default; we allow more but stay bounded
MAX_ARRAY_INDEX = 4_000_000  # Slurm's hard ceiling on a task index

_RANGE = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


@dataclass(frozen=True)
class ArraySpec:
    indices: tuple[int, ...]
    limit: int | None  # %N: at most N tasks running at once


class ArraySyntaxError(ValueError):
    pass


@lru_cache(maxsize=1024)
def parse_array(text: str, max_tasks: int = MAX_ARRAY_TASKS) -> ArraySpec:
    """'0-99%10', '1,3,5', '0-15:4', '1-5,10%2' -> the sorted task indices and the %N limit."""
    body, limit = text.strip(), None
    if not body:
        raise ArraySyntaxError("is empty; give indices such as 0-9, 1,3,5 or 0-99%10")
    if "%" in body:
        body, _, pct = body.partition("%")
        if not pct.isdigit() or int(pct) < 1:
            raise ArraySyntaxError(f"{text!r}: the %N limit must be a whole number of at least 1, as in 0-99%10")
        limit = int(pct)
    ranges, count = [], 0
    for part in body.split(","):
        m = _RANGE.fullmatch(part.strip())
        if not m:
            raise ArraySyntaxError(
                f"{text!r}: {part.strip()!r} is not an index or range; use N, A-B or A-B:STEP, separated by commas"
            )
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) is not None else start
        step = int(m.group(3)) if m.group(3) is not None else 1
        if end < start:
            raise ArraySyntaxError(f"{text!r}: range {start}-{end} runs backwards; write it as {end}-{start}")
        if step < 1:
            raise ArraySyntaxError(f"{text!r}: step {step} must be at least 1")
        if end > MAX_ARRAY_INDEX:
            raise ArraySyntaxError(f"{text!r}: index {end} is above the largest allowed index {MAX_ARRAY_INDEX}")
        count += (end - start) // step + 1
        if count > max_tasks:
            raise ArraySyntaxError(
                f"{text!r} asks for more than {max_tasks} tasks; at most {max_tasks} per array (split it into"
                " several arrays or use a step, e.g. 0-99999:10)"
            )
        ranges.append((start, end, step))
    indices = sorted({i for start, end, step in ranges for i in range(start, end + 1, step)})
    return ArraySpec(tuple(indices), limit)
