"""sbatch's -t/--time as Slurm reads it: a bare number is minutes."""

from __future__ import annotations

import pytest

from vipu.cli.slurm_time import UNLIMITED, clock, limit, slurm_limit, slurm_seconds


@pytest.mark.parametrize(("text", "want"), [
    ("90", 90 * 60),  # minutes, not seconds
    ("1", 60),
    (" 10 ", 600),
    ("5:30", 5 * 60 + 30),  # MM:SS
    ("0:30", 30),
    ("02:30:00", 2 * 3600 + 30 * 60),  # HH:MM:SS
    ("1-0", 86400),  # D-HH
    ("2-12", 2 * 86400 + 12 * 3600),
    ("1-02:03", 86400 + 2 * 3600 + 3 * 60),  # D-HH:MM
    ("1-00:00:00", 86400),  # D-HH:MM:SS
    ("0-00:00:01", 1),
    ("366-00:00:00", 366 * 86400),
])
def test_slurm_time_forms(text, want):
    assert slurm_seconds(text) == want


@pytest.mark.parametrize(("text", "said"), [
    ("", "is not a Slurm time"),
    ("abc", "is not a Slurm time"),
    ("10m", "is not a Slurm time"),  # vipu's unit form belongs to --time-limit
    ("1:2:3:4", "is not a Slurm time"),
    ("-5", "is not a Slurm time"),
    ("1-", "is not a Slurm time"),
    ("1.5", "is not a Slurm time"),
    ("0", "means no limit"),
    ("UNLIMITED", "means no limit"),
    ("infinite", "means no limit"),
    ("0:00", "no time at all"),
    ("367-00:00:00", "longer than a year"),
    ("600000", "longer than a year"),
])
def test_what_is_not_a_slurm_time_is_refused_saying_why(text, said):
    with pytest.raises(ValueError, match=said) as refused:
        slurm_seconds(text)
    assert repr(text) in str(refused.value)


@pytest.mark.parametrize("text", ["UNLIMITED", "unlimited", "INFINITE", "0", " 0 "])
def test_a_time_limit_may_be_unlimited_as_in_slurm(text):
    assert slurm_limit(text) == UNLIMITED


def test_a_time_limit_is_otherwise_read_as_slurm_time():
    assert slurm_limit("90") == 90 * 60


def test_a_number_past_what_python_converts_is_not_a_slurm_time():
    """Regression: 5,000 digits gave Python's "Exceeds the limit (4300 digits) ... sys.set_int_max_str_digits()"."""
    with pytest.raises(ValueError, match="is not a Slurm time; use minutes"):
        slurm_seconds("1" * 5000)


def test_no_time_limit_shows_as_unlimited_and_any_other_as_a_time():
    """The controller keeps UNLIMITED as its longest limit, 366 days: squeue, scontrol and sacct show UNLIMITED."""
    assert limit(366 * 86400) == "UNLIMITED" and limit(90 * 60) == "1:30:00"
    assert limit(365 * 86400 + 1, lambda s: "other") == "other" and clock(365 * 86400) == "365-00:00:00"


def test_timelimit_raw_says_the_minutes_timelimit_says():
    """walk40: TimelimitRaw was 1 next to Timelimit 00:00:20 (a limit vipu keeps in seconds where Slurm rounds it up
    to a minute); now the same limit in both."""
    from vipu.cli.slurm_time import raw_minutes

    assert [raw_minutes(s) for s in (20, 60, 90, 300, 86400)] == ["0.33", "1", "1.50", "5", "1440"]
