"""Times as a Slurm user types them, through a real controller: -t reads minutes and UNLIMITED, --time-limit and
--duration need a unit, --begin takes sbatch's calendar forms."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from tests.cli.test_cli_e2e import run
from tests.cli.test_job_ids_and_simulate import one_error

HELD = ("--ipus", "1", "--hold")


def submit(server, *args: str) -> dict:
    out = run(server, "vipu", "submit", *HELD, "--parsable", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(run(server, "vipu", "show", "job", out.stdout.strip(), "--json").stdout)


def test_minutes_unlimited_and_units(server):
    assert submit(server, "-t", "90")["time_limit_s"] == 90 * 60
    assert submit(server, "--time", "1-00:00:00")["time_limit_s"] == 86400
    # no QOS limit on normal: UNLIMITED is the controller's longest, a year (366 days)
    assert submit(server, "-t", "UNLIMITED")["time_limit_s"] == 366 * 86400
    assert submit(server, "-t", "0")["time_limit_s"] == 366 * 86400
    assert submit(server, "--time-limit", "90s")["time_limit_s"] == 90
    for flag in ("--time-limit", "--duration"):
        out = run(server, "vipu", "submit", *HELD, flag, "90")
        assert out.returncode == 2, out.stderr
        assert "'90' has no unit: write 90s for seconds or 90m for minutes" in one_error(out)
    assert run(server, "vipu", "queue", "--no-header").stdout.count("\n") == 5  # the refusals queued nothing


def test_begin_takes_sbatch_calendar_forms(server):
    now = datetime.now()
    job = submit(server, "--begin", "teatime")
    at = datetime.fromtimestamp(job["begin_time"])
    assert (at.hour, at.minute, at.second) == (16, 0, 0) and timedelta(0) <= at - now <= timedelta(days=1)
    assert job["spec"]["begin"] == "16:00:00" and job["reason"] == "JobHeldUser"
    tomorrow = datetime.fromtimestamp(submit(server, "-b", "tomorrow")["begin_time"])
    assert tomorrow.date() == (now + timedelta(days=1)).date() and tomorrow.hour == 0
    out = run(server, "vipu", "submit", *HELD, "--begin", "25:00")
    assert out.returncode == 2 and "-b/--begin: '25:00' is not a time" in one_error(out), out.stderr
