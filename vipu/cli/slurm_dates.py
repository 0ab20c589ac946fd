"""Times as sacct reads -S/--starttime and -E/--endtime (man sacct; Slurm's parse_time, looking back): a date, a
time of day, both, or `now` with an offset, in local time.

  YYYY-MM-DD[THH:MM[:SS]]    MM/DD[/YY][-HH:MM[:SS]]    MM.DD[.YY][-HH:MM[:SS]]    MMDD[YY][-HH:MM[:SS]]
  HH:MM[:SS][AM|PM]          today, tomorrow, midnight, noon, elevenses (11:00), fika (15:00), teatime (16:00)
  now[{+|-}COUNT[seconds|minutes|hours|days|weeks]]   (seconds by default: now-3600 is an hour ago)

A date without a time is its midnight; a time without a date is today's; a date without a year is this year's,
or last year's if its month is still to come (sacct asks about the past)."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

# no "[/" in it: the help's rich markup would read [/YY] as a closing tag (vipu history --help failed)
FORMS = ("YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS], MM/DD or MM/DD/YY, HH:MM[:SS], midnight, today, now-1hour or now-2days"
         " (man sacct's forms)")

_WORDS = {"midnight": (0, 0), "noon": (12, 0), "elevenses": (11, 0), "fika": (15, 0), "teatime": (16, 0)}
_UNITS = {"": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1, "min": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
          "w": 604800, "week": 604800, "weeks": 604800}
_NOW = re.compile(r"now\s*(?:([+-])\s*([0-9]+)\s*([a-z]*))?")
_TIME = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?\s*(am|pm)?")
_DATES = (
    re.compile(r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"),
    re.compile(r"(?P<m>[0-9]{1,2})/(?P<d>[0-9]{1,2})(?:/(?P<y>[0-9]{2}))?"),
    re.compile(r"(?P<m>[0-9]{1,2})\.(?P<d>[0-9]{1,2})(?:\.(?P<y>[0-9]{2}))?"),
    re.compile(r"(?P<m>[0-9]{2})(?P<d>[0-9]{2})(?P<y>[0-9]{2})?"),
)


def parse_slurm_time(text: str, now: float) -> float:
    """Unix seconds for `text`; ValueError saying what is wrong with it otherwise."""
    value = text.strip().lower()
    moment = datetime.fromtimestamp(now)
    m = _NOW.fullmatch(value)
    if m:
        sign, count, unit = m.groups()
        if sign is None:
            return float(int(now))
        if unit not in _UNITS:
            raise ValueError(f"{text!r} has the unit {unit!r}; use seconds, minutes, hours, days or weeks")
        return float(int(now)) + (1 if sign == "+" else -1) * int(count) * _UNITS[unit]
    day, clock, rest = None, None, value
    for word, when in (("today", moment.date()), ("tomorrow", moment.date() + timedelta(days=1))):
        if rest.startswith(word):
            day, rest = when, rest[len(word):]
    if day is None:
        day, rest = _date(rest, moment)
    rest = re.sub(r"^(?:-|t(?=[0-9]))", "", rest.strip()).strip()  # the T or - between a date and its time
    if rest in _WORDS:
        clock = (*_WORDS[rest], 0)
    elif rest:
        clock = _clock(rest, text)
    if day is None and clock is None:
        raise ValueError(f"{text!r} is not a time")
    hour, minute, second = clock or (0, 0, 0)
    return datetime.combine(day or moment.date(), datetime.min.time()).replace(
        hour=hour, minute=minute, second=second).timestamp()


def _date(text: str, moment: datetime) -> tuple[date | None, str]:
    """The date at the start of `text`, and what follows it."""
    for pattern in _DATES:
        m = pattern.match(text)
        if m is None or (m.end() < len(text) and text[m.end()] not in " t-"):
            continue
        year = m.group("y")
        month, day = int(m.group("m")), int(m.group("d"))
        if year is None:
            year = moment.year - 1 if month > moment.month else moment.year
        elif len(year) == 2:
            year = 2000 + int(year)
        try:
            return date(int(year), month, day), text[m.end():]
        except ValueError as e:
            raise ValueError(f"{text!r} is not a date ({e})") from None
    return None, text


def _clock(text: str, whole: str) -> tuple[int, int, int]:
    m = _TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"{whole!r} is not a time")
    hour, minute, second, half = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), m.group(4)
    if half:
        if not 1 <= hour <= 12:
            raise ValueError(f"{whole!r} has hour {hour} with {half.upper()}; give 1 to 12")
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"{whole!r} is not a time of day")
    return hour, minute, second
