"""Durations as people and Slurm write them, turned into seconds once, at the edge.

Why accept several spellings: users paste Slurm's `--time` values ("1-00:00:00", "02:30:00") as well as the
unit form the rest of vipu-sim uses ("1h30m", "90s").

Why a number is seconds but a string of digits is refused: a spec's number (`time_limit: 90`) is seconds, as every
number in a spec is. Text is what people type, and there Slurm's `-t 90` means 90 minutes. So text must carry its
unit ("90s", "90m") or Slurm's colons; sbatch's own -t, where a bare number is minutes, has its own parser
(vipu/cli/slurm_time.py). Trace readers turn their numeric columns into numbers first.
"""

from __future__ import annotations

import math
import re

from pydantic_core import PydanticCustomError

MAX_SECONDS = 366 * 86400.0  # a year: backfill needs finite limits, and anything longer is a typo

_UNITS = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?")
_SLURM = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")

HELP = "use units (90s, 10m, 1h30m, 2d), Slurm's [D-]HH:MM:SS (1-00:00:00, 02:30:00) or, in a spec, a number of seconds"
UNLIMITED = ("unlimited", "infinite")  # Slurm's words for no limit


def _slurm(text: str) -> float | None:
    m = _SLURM.fullmatch(text)
    if not m or (m.group(1) is None and m.group(3) is None):
        return None  # a bare number is handled by the caller as seconds
    days, a, b, c = (int(g) if g is not None else None for g in m.groups())
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = a, b or 0, c or 0
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if c is not None:  # HH:MM:SS
        return (a * 60 + b) * 60 + c
    return a * 60 + b  # MM:SS


def parse_duration(value: object, field: str = "duration", positive: bool = False, unlimited: bool = False) -> float:
    """Seconds from an int/float or a duration string; raises a pydantic error naming the accepted forms.
    `positive`: the field needs more than 0 (a time limit), which a negative value's message then says.
    `unlimited`: UNLIMITED or INFINITE give math.inf, for the caller to replace by the longest limit allowed."""
    need = "more than 0" if positive else "0 or more"
    if isinstance(value, bool):
        raise PydanticCustomError("duration", "{field} is a boolean; " + HELP, {"field": field})
    if isinstance(value, (int, float)):
        seconds = float(value)
        if unlimited and seconds == math.inf:  # UNLIMITED, once parsed and written out again
            return seconds
    elif isinstance(value, str):
        text = value.strip().lower()
        if text.startswith("-"):  # a negative duration of any spelling, not "not a duration"
            raise PydanticCustomError("duration", "{value} is negative; give " + need + ", e.g. 10m",
                                      {"value": repr(value)})
        seconds = None
        if unlimited and text in UNLIMITED:
            return math.inf
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            raise PydanticCustomError(
                "duration", "{value} has no unit: write {text}s for seconds or {text}m for minutes (Slurm's -t {text}"
                " means {text} minutes)", {"value": repr(value), "text": text})
        if ":" in text or "-" in text:
            seconds = _slurm(text)
        elif text:
            m = _UNITS.fullmatch(text)
            if m and any(m.groups()):
                d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
                seconds = ((d * 24 + h) * 60 + mi) * 60 + s
        if seconds is None:
            raise PydanticCustomError("duration", "{value} is not a duration; " + HELP, {"value": repr(value)})
    else:
        raise PydanticCustomError("duration", "expected a duration, got {kind}; " + HELP, {"kind": type(value).__name__})
    if not math.isfinite(seconds) or seconds < 0:
        raise PydanticCustomError("duration", "{value} is negative or not finite; give " + need + ", e.g. 10m",
                                  {"value": _shown(value)})
    if seconds > MAX_SECONDS:
        raise PydanticCustomError(
            "duration", "{value} is longer than a year; give at most 366 days", {"value": _shown(value)}
        )
    return seconds


def _shown(value: object) -> str:
    """A duration as a message echoes it: text as typed, a number as seconds with its unit (90s, not 90.0)."""
    if isinstance(value, (int, float)) and math.isfinite(value):
        return f"{int(value)}s" if float(value).is_integer() else f"{value}s"
    return repr(value)


def format_duration(seconds: float | None) -> str:
    """Slurm's elapsed-time style: [D-]HH:MM:SS."""
    if seconds is None:
        return ""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock
