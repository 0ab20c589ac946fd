"""What a runbook tells the on-call to type works as written and reads as it says on a healthy controller (walk45:
VipuQueueStuck's event was a submit the CLI refuses, and a held submit moves no cycle count, so a running loop
read as a stopped one)."""

from __future__ import annotations

import re
import shlex
import urllib.request
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for

RUNBOOKS = Path(__file__).resolve().parents[2] / "docs/runbooks"


def cycles(server) -> float:
    text = urllib.request.urlopen(server.metrics_url, timeout=5).read().decode()
    return float(re.search(r"^vipu_scheduler_cycle_seconds_count (\S+)$", text, re.M).group(1))


def test_the_queue_stuck_runbooks_event_makes_a_running_loop_count_a_cycle(server):
    text = " ".join((RUNBOOKS / "VipuQueueStuck.md").read_text().split())
    event = re.search(r"Give it an event: `(vipu submit [^`]*)`", text)
    assert event and "then `vipu cancel` that job. The count grows within a second of the cancel" in text
    submitted = run(server, *shlex.split(event.group(1)))
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split()[-1]
    before = cycles(server)
    assert run(server, "vipu", "cancel", job).returncode == 0
    wait_for(lambda: cycles(server) > before, timeout=10)  # "within a second": seconds of room on a loaded machine
