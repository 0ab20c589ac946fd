"""Begin times (sbatch --begin): when a job becomes eligible to run, as people and Slurm write it.

Accepted, case-insensitive, surrounding spaces ignored:
  - an ISO-8601 time: 2026-11-22T14:00:00, 2026-11-22 14:00, 2026-11-22 (midnight), with an optional fraction and
    zone (Z, +01:00); without a zone it is the controller's local time, as Slurm reads --begin in local time;
  - `now`, or `now+COUNT[UNIT]`: UNIT seconds (the default, as in Slurm: now+90), minutes, hours, days or weeks,
    spelled as Slurm does (now+1hour, now+10minutes, now+2days) or short (s, sec, min, h, d, w), or any duration
    vipu accepts elsewhere (now+10m, now+1h30m, now+02:30:00);
  - a number: an absolute time on the scheduler's clock (Unix seconds on a live controller; trace seconds in a
    replay).

Why a bare duration such as `10m` is refused: Slurm reads `--begin=16:00` as a time of day, not "in 16 minutes",
so the short form would mean different things to different users; `now+10m` means one thing.

Why a relative time stays relative in the spec (`now+600`) and becomes absolute only at submit: the spec is the
user's request, so a retried submit with the same request id compares equal; the absolute time is the job's
`begin_time`, fixed when the job is queued and kept across restarts.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, time

from pydantic_core import PydanticCustomError

from vipu.scheduler.durations import MAX_SECONDS, parse_duration

HELP = (
    "give an ISO-8601 time (2026-11-22T14:00:00; add Z or +01:00 for a zone, else it is the controller's local"
    " time), now+DURATION (now+10m, now+1hour, now+90 for seconds) or a number of seconds since the Unix epoch"
)

_UNIT_SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
                 "min": 60, "mins": 60, "minute": 60, "minutes": 60,
                 "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
                 "d": 86400, "day": 86400, "days": 86400,
                 "w": 604800, "week": 604800, "weeks": 604800}
_SLURM_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[t ].*)?")
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
    """The `begin` field checked and normalised: None, an absolute time (float) or `now+SECONDS` (str)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _error(value, "is a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise _error(value, "is negative or not finite")
        return float(value)
    if isinstance(value, datetime):  # YAML turns an unquoted 2026-11-22 14:00:00 into a datetime already
        return value.timestamp()
    if isinstance(value, date):  # ... and an unquoted 2026-11-22 into a date: its local midnight
        return datetime.combine(value, time()).timestamp()
    if not isinstance(value, str):
        raise _error(type(value).__name__, "is not a time")
    text = value.strip().lower()
    if text == NOW:
        return _canonical(0)
    if text.startswith(NOW):
        rest = text[len(NOW):].lstrip()
        if not rest.startswith("+"):
            raise _error(value, "is not a time (only now+OFFSET is relative; a begin in the past is simply now)")
        return _canonical(_relative(rest[1:].strip(), value))
    if _NUMBER.fullmatch(text):  # `--begin 1795620000` on the command line: the number a spec file may give
        return parse_begin(float(text))
    if _ISO.fullmatch(text):
        try:
            when = datetime.fromisoformat(value.strip().upper())
        except ValueError as e:
            raise _error(value, f"is not a valid ISO-8601 time ({e})") from None
        return when.timestamp()  # naive: local time, as Slurm reads --begin
    try:
        parse_duration(text, "begin")
    except PydanticCustomError:
        raise _error(value, "is not a time") from None
    raise PydanticCustomError(
        "begin", "{value} is ambiguous: a delay or a time of day? write now+{text} for a delay, or a date and time"
        " such as 2026-11-22T16:00 (ISO-8601)", {"value": repr(value), "text": text})


def begin_time(value: float | str | None, now: float) -> float | None:
    """The absolute begin time of a normalised `begin` for a job submitted at `now` (None: none given)."""
    if value is None:
        return None
    if isinstance(value, str):
        return now + float(value[len(NOW) + 1:])
    return float(value)
