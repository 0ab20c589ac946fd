"""sbatch's -t/--time, as Slurm reads it: a bare number is minutes; and times as squeue and sacct write them.

Why its own parser, apart from --time-limit's (vipu/scheduler/durations.py, where a bare number is seconds): every
Slurm user reads `-t 90` as 90 minutes, and a script's `#SBATCH -t 90` must mean what it means under sbatch. Slurm
keeps limits in whole minutes and rounds MM:SS up; vipu-sim keeps seconds, so `-t 0:30` is 30 seconds here.
"""

from __future__ import annotations

import re
import time
from typing import Callable

# minutes | MM:SS | HH:MM:SS | D-HH | D-HH:MM | D-HH:MM:SS (Slurm's time_str2mins)
_TIME = re.compile(r"(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)")
MAX_DAYS = 366  # the controller's longest limit (durations.MAX_SECONDS)

FORMS = "minutes (90), MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. 1-00:00:00), or UNLIMITED"
UNLIMITED = "unlimited"  # what a spec's time_limit takes for Slurm's UNLIMITED, INFINITE and 0


def slurm_limit(text: str) -> int | str:
    """A time limit as sbatch -t reads it: seconds, or UNLIMITED (also INFINITE and 0, as in Slurm), which the
    controller turns into the longest limit the job's QOS allows."""
    if text.strip().lower() in ("unlimited", "infinite", "0"):
        return UNLIMITED
    return slurm_seconds(text)


def slurm_seconds(text: str) -> int:
    """Seconds from Slurm's time format; ValueError saying the accepted forms for anything else."""
    value = text.strip()
    m = _TIME.fullmatch(value)
    if value.lower() in ("unlimited", "infinite", "0"):
        raise ValueError(f"{text!r} means no limit, which this field does not take; give e.g. 1-00:00:00 (at"
                         f" most {MAX_DAYS} days)")
    if not m or len(value) > 20:  # longer is past a year whatever it says, and past what int() converts
        raise ValueError(f"{text!r} is not a Slurm time; use {FORMS}")
    days, d_hours, d_minutes, d_seconds, a, b, c = (int(g) if g is not None else None for g in m.groups())
    if days is not None:
        seconds = ((days * 24 + d_hours) * 60 + (d_minutes or 0)) * 60 + (d_seconds or 0)
    elif c is not None:  # HH:MM:SS
        seconds = (a * 60 + b) * 60 + c
    elif b is not None:  # MM:SS
        seconds = a * 60 + b
    else:  # minutes
        seconds = a * 60
    if seconds == 0:
        raise ValueError(f"{text!r} is no time at all; give a positive time such as 10 (minutes) or 1:00:00")
    if seconds > MAX_DAYS * 86400:
        raise ValueError(f"{text!r} is longer than a year; give at most {MAX_DAYS} days ({MAX_DAYS}-00:00:00)")
    return seconds


def limit(seconds: float, shown: Callable[[float], str] | None = None) -> str:
    """A time limit as Slurm shows one: UNLIMITED for none (the controller keeps it as its longest, MAX_DAYS days),
    else `shown` (default clock)."""
    return "UNLIMITED" if seconds >= MAX_DAYS * 86400 else (shown or clock)(seconds)


def raw_minutes(seconds: float) -> str:
    """sacct's TimelimitRaw, a limit in minutes: whole, as Slurm's (which rounds -t 0:20 up to a minute), or to two
    places for a limit with seconds, which vipu keeps where Slurm would round (-t 0:20 is 0.33, as Timelimit's
    00:00:20 says)."""
    minutes = seconds / 60
    return str(int(minutes)) if minutes == int(minutes) else f"{minutes:.2f}"


def clock(seconds: float) -> str:
    """squeue's TIME: M:SS, H:MM:SS or D-HH:MM:SS."""
    seconds = int(max(0, seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def stamp(value: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(value)) if value else "Unknown"
