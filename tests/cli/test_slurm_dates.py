"""sacct's -S/-E times (man sacct), read looking back from a fixed now, in local time."""

from __future__ import annotations

from datetime import datetime

import pytest

from vipu.cli.slurm_dates import parse_slurm_time

NOW = datetime(2026, 3, 10, 15, 30, 20).timestamp()


def at(*parts: int) -> float:
    return datetime(*parts).timestamp()


@pytest.mark.parametrize(("text", "want"), [
    ("now", NOW),
    ("now-1hour", NOW - 3600),
    ("now-90", NOW - 90),  # seconds by default
    ("NOW - 2 days", NOW - 2 * 86400),
    ("now+10minutes", NOW + 600),
    ("now-1weeks", NOW - 604800),
    ("2026-02-01", at(2026, 2, 1)),  # a date: its midnight
    ("2026-02-01T08:15", at(2026, 2, 1, 8, 15)),
    ("2026-02-01T08:15:30", at(2026, 2, 1, 8, 15, 30)),
    ("02/01", at(2026, 2, 1)),  # without a year: this year's
    ("12/24", at(2025, 12, 24)),  # ... or last year's, when its month is still to come
    ("02/01/25", at(2025, 2, 1)),
    ("02/01-13:45", at(2026, 2, 1, 13, 45)),
    ("02.01.25-13:45:10", at(2025, 2, 1, 13, 45, 10)),
    ("0201", at(2026, 2, 1)),
    ("020125", at(2025, 2, 1)),
    ("16:00", at(2026, 3, 10, 16)),  # a time of day: today's, even one still to come (sacct looks back)
    ("4:05:06pm", at(2026, 3, 10, 16, 5, 6)),
    ("12:00am", at(2026, 3, 10, 0)),
    ("midnight", at(2026, 3, 10)),
    ("today", at(2026, 3, 10)),
    ("tomorrow", at(2026, 3, 11)),
    ("noon", at(2026, 3, 10, 12)),
    ("teatime", at(2026, 3, 10, 16)),
    ("fika", at(2026, 3, 10, 15)),
    ("elevenses", at(2026, 3, 10, 11)),
    ("today 08:00", at(2026, 3, 10, 8)),
])
def test_sacct_time_forms(text, want):
    assert parse_slurm_time(text, NOW) == want


@pytest.mark.parametrize(("text", "said"), [
    ("yesterday", "is not a time"),
    ("now-1fortnight", "has the unit 'fortnight'"),
    ("25:00", "is not a time of day"),
    ("13:00pm", "has hour 13 with PM"),
    ("2026-02-30", "is not a date"),
    ("", "is not a time"),
    ("2026-02-01Tnoonish", "is not a time"),
])
def test_what_is_not_a_time_says_why(text, said):
    with pytest.raises(ValueError, match=said):
        parse_slurm_time(text, NOW)
