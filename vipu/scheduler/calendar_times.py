"""Times of day and dates as sbatch --begin and sacct --starttime read them, in the controller's local time.

Accepted (case-insensitive): HH:MM[:SS] with an optional AM or PM; midnight, noon, elevenses (11:00), fika (15:00)
and teatime (16:00); today and tomorrow; MM/DD[/YY], MM.DD[.YY] and MMDD[YY], each with an optional -HH:MM[:SS];
and YYYY-MM-DD[THH:MM[:SS]] (any ISO-8601 time, with an optional zone).

Why some forms stay text until a clock is known: "16:00" is the next 16:00 after the job is submitted, and 11/22 is
this year's or, once passed, next year's (Slurm's rule). So `canonical` keeps them as text ("16:00:00",
"tomorrow", "11/22 16:00:00"), which a retried submit compares equal, and `resolve` fixes them against the
scheduler's clock at submit. A date with its year is absolute at once.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(am|pm)?")
_NAMED = {"midnight": "00:00:00", "noon": "12:00:00", "elevenses": "11:00:00", "fika": "15:00:00",
          "teatime": "16:00:00"}
_DATE = re.compile(r"(\d{1,2})([/.])(\d{1,2})(?:\2(\d{2}|\d{4}))?(?:-(.+))?")  # MM/DD[/YY][-time]
_PACKED = re.compile(r"(\d{2})(\d{2})(\d{2})?(?:-(.+))?")  # MMDD[YY][-time]
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[t ].*)?")
_KEPT = re.compile(r"(\d{2})/(\d{2}) (\d{2}:\d{2}:\d{2})")  # a date as `canonical` keeps it: read back the same
TOMORROW = "tomorrow"


class NotATime(ValueError):
    """The text looks like a calendar time but is not a valid one; the message says what is wrong."""


def _clock(text: str) -> str:
    """HH:MM:SS from HH:MM[:SS][AM|PM] or a named time; NotATime otherwise."""
    if text in _NAMED:
        return _NAMED[text]
    m = _CLOCK.fullmatch(text)
    if not m:
        raise NotATime(f"{text!r} is not a time of day (HH:MM[:SS])")
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if m.group(4):
        if not 1 <= hour <= 12:
            raise NotATime(f"{text!r} has hour {hour}, which AM or PM does not take (1 to 12)")
        hour = hour % 12 + (12 if m.group(4) == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise NotATime(f"{text!r} is not a time of day (hours 0-23, minutes and seconds 0-59)")
    return f"{hour:02d}:{minute:02d}:{second:02d}"


def _year(text: str | None) -> int | None:
    if text is None:
        return None
    return int(text) + 2000 if len(text) == 2 else int(text)


def _dated(month: str, day: str, year: str | None, clock: str | None) -> str | float:
    at = _clock(clock) if clock else "00:00:00"
    m, d, y = int(month), int(day), _year(year)
    try:
        datetime(y or 2000, m, d)  # 2000 is a leap year: 02/29 without a year is a date
    except ValueError:
        raise NotATime(f"{month}/{day} is not a date (MM/DD)") from None
    if y is None:
        return f"{m:02d}/{d:02d} {at}"
    return datetime.fromisoformat(f"{y:04d}-{m:02d}-{d:02d}T{at}").timestamp()


def canonical(text: str) -> str | float | None:
    """A calendar time as text to resolve at submit, or an absolute time; None if `text` is no calendar form (the
    caller tries its own); NotATime if it is one but invalid. `text` is stripped and lower-case."""
    if text == "today":
        return None  # the caller's `now`
    if text == TOMORROW:
        return TOMORROW
    if text in _NAMED or _CLOCK.fullmatch(text):
        return _clock(text)
    if _ISO.fullmatch(text):
        try:
            return datetime.fromisoformat(text.upper()).timestamp()  # without a zone: local time, as Slurm's
        except ValueError as e:
            raise NotATime(f"{text!r} is not a valid ISO-8601 time ({e})") from None
    if m := _KEPT.fullmatch(text):  # a spec holding it is read again (overrides, an update)
        return _dated(m.group(1), m.group(2), None, m.group(3))
    if m := _DATE.fullmatch(text):
        return _dated(m.group(1), m.group(3), m.group(4), m.group(5))
    if m := _PACKED.fullmatch(text):
        return _dated(m.group(1), m.group(2), m.group(3), m.group(4))
    return None


def resolve(value: str, now: float) -> float:
    """The first moment at or after `now` that a canonical text names."""
    today = datetime.fromtimestamp(now)
    if value == TOMORROW:
        return datetime.combine(today.date() + timedelta(days=1), datetime.min.time()).timestamp()
    if "/" in value:
        day, at = value.split(" ")
        month, mday = (int(x) for x in day.split("/"))
        for year in range(today.year, today.year + 9):  # 02/29 comes back within eight years
            try:
                when = datetime.fromisoformat(f"{year:04d}-{month:02d}-{mday:02d}T{at}")
            except ValueError:
                continue
            if when.timestamp() >= now:
                return when.timestamp()
        raise NotATime(f"{value!r} names no date in the next eight years")
    when = datetime.fromisoformat(f"{today.date().isoformat()}T{value}")
    if when.timestamp() < now:  # passed today: tomorrow, as Slurm reads --begin=16:00
        when += timedelta(days=1)
    return when.timestamp()
