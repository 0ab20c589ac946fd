"""Slurm's `--array` syntax: which task indices an array job has and how many may run at once; and its inverse,
indices written back as squeue writes them. The CLI reads the task ranges of job ids (26_[1-3,7]) with the same
parser, so this module imports nothing heavier than `re`.

Why the size is computed before anything is expanded: "0-1000000000" must be refused in microseconds with a message,
not after building a billion-element list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_ARRAY_TASKS = 10_000  # Slurm's MaxArraySize is 1001 by default; we allow more but stay bounded
MAX_ARRAY_INDEX = 4_000_000  # Slurm's hard ceiling on a task index

_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?")  # not \d, which takes other scripts' digits too


@dataclass(frozen=True)
class ArraySpec:
    indices: tuple[int, ...]
    limit: int | None  # %N: at most N tasks running at once


class ArraySyntaxError(ValueError):
    """Task indices refused: `problem` says what is wrong, `fix` how to write them; str(): both, after the text as
    written. A caller with a text of its own (a job id) words the line itself."""

    def __init__(self, text: str, problem: str, fix: str):
        shown = text if len(text) <= 60 else f"{text[:40]}..."
        super().__init__(f"{shown!r}: {problem}; {fix}" if text.strip() else f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


class TooManyTasks(ArraySyntaxError):
    """More tasks than an array may have: what to do instead depends on who asks (submit another way, or name the
    tasks there are)."""


def _number(text: str, digits: str) -> int:
    """int(digits), refusing a number longer than any index could be (int() raises on thousands of digits)."""
    if len(digits.lstrip("0")) > len(str(MAX_ARRAY_INDEX)):
        shown = digits if len(digits) <= 12 else f"{digits[:12]}... ({len(digits)} digits)"
        raise ArraySyntaxError(text, f"{shown} is larger than any array allows (task indices go up to"
                               f" {MAX_ARRAY_INDEX})", f"give numbers from 0 to {MAX_ARRAY_INDEX}")
    return int(digits)


@lru_cache(maxsize=1024)
def parse_array(text: str, max_tasks: int = MAX_ARRAY_TASKS) -> ArraySpec:
    """'0-99%10', '1,3,5', '0-15:4', '1-5,10%2' -> the sorted task indices, each once, and the %N limit."""
    body, limit = text.strip(), None
    if not body:
        raise ArraySyntaxError(text, "is empty", "give indices such as 0-9, 1,3,5 or 0-99%10")
    if "%" in body:
        body, _, pct = body.partition("%")
        if pct.isascii() and pct.isdigit() and len(pct.lstrip("0")) > len(str(MAX_ARRAY_INDEX)):
            shown = pct if len(pct) <= 12 else f"{pct[:12]}... ({len(pct)} digits)"
            raise ArraySyntaxError(text, f"the %N limit {shown} is more than any array runs at once",
                                   f"give at most {max_tasks}, or leave out %N for no limit")
        if not (pct.isascii() and pct.isdigit()) or int(pct) < 1:
            raise ArraySyntaxError(text, "the %N limit must be a whole number of at least 1",
                                   "e.g. 0-99%10 runs at most 10 at once")
        limit = int(pct)
    ranges, count = [], 0
    for part in body.split(","):
        m = _RANGE.fullmatch(part.strip())
        if not m:
            raise ArraySyntaxError(text, f"{part.strip()!r} is not a task index or range",
                                   "use N, A-B or A-B:STEP, separated by commas, e.g. 1-3,7 or 0-90:10")
        start = _number(text, m.group(1))
        end = _number(text, m.group(2)) if m.group(2) is not None else start
        step = _number(text, m.group(3)) if m.group(3) is not None else 1
        if end < start:
            raise ArraySyntaxError(text, f"range {start}-{end} runs backwards", f"write it as {end}-{start}")
        if step < 1:
            raise ArraySyntaxError(text, f"a step of {step} names no tasks", "give a step of 1 or more")
        if end > MAX_ARRAY_INDEX:
            raise ArraySyntaxError(text, f"task index {end} is above the largest, {MAX_ARRAY_INDEX}",
                                   f"give indices from 0 to {MAX_ARRAY_INDEX}")
        count += (end - start) // step + 1
        if count > max_tasks:
            raise TooManyTasks(text, f"names more than {max_tasks} tasks",
                               f"at most {max_tasks} per array (split it into several arrays or use a step, e.g."
                               " 0-99999:10)")
        ranges.append((start, end, step))
    indices = sorted({i for start, end, step in ranges for i in range(start, end + 1, step)})
    return ArraySpec(tuple(indices), limit)


def spans(indices: list[int]) -> str:
    """Sorted task indices, each once, as squeue writes them (the inverse of parse_array): 0-3,7,9-10, and a
    stepped run as 0-4000000:1000 (a list of every index of `--array 0-4000000:1000` made a 31,000-character
    line)."""
    out: list[str] = []
    i = 0
    while i < len(indices):
        j = i + 1
        if j < len(indices):
            step = indices[j] - indices[i]
            while j + 1 < len(indices) and indices[j + 1] - indices[j] == step:
                j += 1
            if step == 1 or j - i >= 2:  # a run: 3-4, or three or more a step apart
                out.append(f"{indices[i]}-{indices[j]}" + (f":{step}" if step > 1 else ""))
                i = j + 1
                continue
        out.append(str(indices[i]))
        i += 1
    return ",".join(out)
