"""Begin times (sbatch --begin): when a job becomes eligible to run, as people and Slurm write it.

Accepted, case-insensitive, surrounding spaces ignored:
  - what sbatch takes (calendar_times): 16:00, 4:30pm, midnight, noon, teatime, today, tomorrow, 11/22,
    11/22/26-16:00, 1122, and ISO-8601 times (2026-11-22T14:00:00, 2026-11-22, with an optional zone); without a
    zone, the controller's local time, as Slurm reads --begin;
  - `now`, `now+COUNT[UNIT]` or `now-COUNT[UNIT]` (the past: at once): UNIT seconds (the default, as in Slurm:
    now+90), minutes, hours, days or weeks, spelled as Slurm does (now+1hour, now+10minutes, now+2days) or short
    (s, sec, min, h, d, w), or any duration vipu accepts elsewhere (now+10m, now+1h30m, now+02:30:00);
  - a number of 9 digits or more: an absolute time on the scheduler's clock (Unix seconds on a live controller;
    trace seconds in a replay).

Why a bare duration such as `10m` is refused: Slurm reads `--begin=16:00` as a time of day, not "in 16 minutes",
so a bare duration would mean different things to different users; `now+10m` means one thing.

Why a relative time stays relative in the spec (`now+600`) and becomes absolute only at submit: the spec is the
user's request, so a retried submit with the same request id compares equal; the absolute time is the job's
`begin_time`, fixed when the job is queued and kept across restarts.
"""

from __future__ import annotations

import math
import re

from pydantic_core import PydanticCustomError

from vipu.scheduler import calendar_times
from vipu.scheduler.durations import MAX_SECONDS, parse_duration

HELP = (
    "give a time as sbatch --begin takes it: 16:00, tomorrow, 11/22-16:00, 2026-11-22T16:00 (the controller's local"
    " time unless you add Z or +01:00), now+DURATION (now+10m, now+1hour, now+90 for seconds) or Unix seconds"
)

_UNIT_SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
                 "min": 60, "mins": 60, "minute": 60, "minutes": 60,
                 "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
                 "d": 86400, "day": 86400, "days": 86400,
                 "w": 604800, "week": 604800, "weeks": 604800}
_SLURM_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?")
_EPOCH_DIGITS = 9  # a Unix time since 1973; shorter numbers are Slurm's MMDD[YY] or a mistake
NOW = "now"


def _error(value: object, why: str) -> PydanticCustomError:
    return PydanticCustomError("begin", "{value} " + why + "; " + HELP, {"value": repr(value)})


def _relative(rest: str, value: object) -> float:
    """Seconds after now from the text after `now+`."""
    m = _SLURM_RELATIVE.fullmatch(rest)
    if m and (not m.group(2) or m.group(2) in _UNIT_SECONDS):  # now+90, now+1hour, now+2 days
        seconds = float(m.group(1)) * (_UNIT_SECONDS[m.group(2)] if m.group(2) else 1)
    else:
        try:
            seconds = parse_duration(rest.replace(" ", ""), "begin")
        except PydanticCustomError:
            raise _error(value, f"has an offset {rest!r} that is not a duration") from None
    if seconds > MAX_SECONDS:
        raise PydanticCustomError("begin", "{value} is more than a year away; give at most now+366days",
                                  {"value": repr(value)})
    return seconds


def _canonical(seconds: float) -> str:
    return f"{NOW}+{int(seconds) if seconds == int(seconds) else seconds!r}"


def parse_begin(value: object) -> float | str | None:
    """The `begin` field checked and normalised: None, an absolute time (float), `now+SECONDS` or a calendar time
    to fix at submit (str, see calendar_times)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _error(value, "is a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise _error(value, "is negative or not finite")
        return float(value)
    if not isinstance(value, str):
        raise _error(value, f"(a {type(value).__name__}) is not a time")
    text = value.strip().lower()
    if text in (NOW, "today"):
        return _canonical(0)
    if text.startswith(NOW):
        rest = text[len(NOW):].lstrip()
        if rest.startswith("-"):  # a begin in the past is simply now, as in Slurm
            _relative(rest[1:].strip(), value)
            return _canonical(0)
        if not rest.startswith("+"):
            raise _error(value, "is not a time (now+OFFSET or now-OFFSET)")
        return _canonical(_relative(rest[1:].strip(), value))
    if _NUMBER.fullmatch(text) and len(text.split(".")[0]) >= _EPOCH_DIGITS:
        return parse_begin(float(text))  # `--begin 1795620000` on the command line: the number a spec may give
    try:
        form = calendar_times.canonical(text)
    except calendar_times.NotATime as e:
        raise _error(value, f"is not a time: {e}") from None
    if form is not None:
        return form
    if _NUMBER.fullmatch(text):
        raise _error(value, f"is not a time: a number is Unix seconds ({_EPOCH_DIGITS} digits or more), and Slurm's"
                     " MMDD or MMDDYY has 4 or 6")
    try:
        parse_duration(text, "begin")
    except PydanticCustomError:
        raise _error(value, "is not a time") from None
    raise PydanticCustomError(
        "begin", "{value} is ambiguous: a delay or a time of day? write now+{text} for a delay, or a time such as"
        " 16:00 or 2026-11-22T16:00", {"value": repr(value), "text": text})


def begin_time(value: float | str | None, now: float) -> float | None:
    """The absolute begin time of a normalised `begin` for a job submitted at `now` (None: none given)."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.startswith(NOW):
            return now + float(value[len(NOW) + 1:])
        return calendar_times.resolve(value, now)
    return float(value)
