"""`vipu history` selects jobs as sacct does (man sacct, DEFAULT TIME WINDOW, -S, -E, -s): jobs in any state,
so a running job and an eligible pending one are listed with the ended ones, by -j too, and -S/-E keep the jobs
eligible or running in the window; a held job, which has no EligibleTime, is not listed."""

from __future__ import annotations

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_sacct_e2e import rows


def states(server, *args: str) -> dict[int, str]:
    return {int(job): state for job, state in (line.split("|") for line in
                                                rows(server, "-n", "-P", "-o", "JobID,State", *args))}


def test_running_and_eligible_pending_jobs_are_rows_as_in_sacct(server):
    [ended] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "0.1s")
    wait_for(lambda: show(server, ended)["state"] == "COMPLETED")
    [running] = submit(server, "--ipus", "64", "--time-limit", "10m")
    wait_for(lambda: show(server, running)["state"] == "RUNNING")
    [waiting] = submit(server, "--ipus", "1", "--time-limit", "1m")  # eligible, waits for Resources
    [held] = submit(server, "--ipus", "1", "--time-limit", "1m", "--hold")
    [later] = submit(server, "--ipus", "1", "--time-limit", "1m", "--begin", "now+1hour")
    everything = {ended: "COMPLETED", running: "RUNNING", waiting: "PENDING"}
    assert states(server) == everything  # held and later: no EligibleTime yet
    assert states(server, "-j", f"{running},{held}") == {running: "RUNNING"}
    assert states(server, "-j", str(later)) == {}
    assert states(server, "-S", "now-15minutes") == everything  # still running or pending: in the window
    assert states(server, "-S", "now-15minutes", "-E", "now-10minutes") == {}  # none eligible before -E
    assert states(server, "-s", "R") == {running: "RUNNING"}
    assert run(server, "vipu", "release", str(held)).returncode == 0
    assert states(server, "-j", str(held)) == {held: "PENDING"}
