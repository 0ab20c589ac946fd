"""`vipu submit -W` as sbatch -W waits: through a controller that does not answer for a while, and no longer for a
job the controller no longer has."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.conftest import console_script
from vipu.cli.connection import Connection
from vipu.cli.job_output import wait_for_end
from vipu.client.settings import Settings

QUICK = ("--ipus", "1", "--time-limit", "1m", "--duration", "0.2s")
UNABLE = "vipu: error: currently unable to load job state information, retrying: "


@pytest.mark.timeout(60)  # without the fix it waits forever
def test_submit_wait_stops_waiting_for_a_job_no_longer_found_as_sbatch_does(server, capsys):
    """Regression: -W listed only ended jobs, so a job gone from the controller (its record lost, a rollback
    dropping it) was waited for forever; sbatch's _job_wait says so and stops waiting for it."""
    [ended] = submit(server, *QUICK)
    wait_for(lambda: show(server, ended)["state"] == "COMPLETED")
    cli = SimpleNamespace(conn=Connection("vipu", Settings("127.0.0.1", server.port, "u", None, None), timeout=5))
    gone = ended + 1000  # an id the controller never gave
    assert wait_for_end(cli, [ended, gone]) == 0
    assert capsys.readouterr().err == f"vipu: error: job {gone} no longer found and exit code not found\n"


def test_submit_wait_waits_through_a_controller_restart_longer_than_its_timeout(server):
    """Regression: -W's asks gave up after --timeout with the controller down, and exited UNAVAILABLE while the job
    ran on; sbatch -W retries until slurmctld answers again (src/sbatch/sbatch.c _job_wait)."""
    waiting = subprocess.Popen(
        [console_script("vipu"), "--timeout", "1", "submit", "-W", "--parsable", "--ipus", "1", "--time-limit", "1m",
         "--duration", "8s"], env=server.env(), cwd=server.state_dir.parent, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        job = int(waiting.stdout.readline())
        wait_for(lambda: show(server, job)["state"] == "RUNNING")
        server.kill()  # a kill -9: the job's timer resumes against its start when the controller is back
        said = waiting.stderr.readline()  # once its asks have failed for --timeout
        assert said.startswith(UNABLE) and waiting.poll() is None, said
        server.start()
        assert waiting.wait(timeout=60) == 0
        assert show(server, job)["state"] == "COMPLETED"
    finally:
        waiting.kill()
        waiting.wait()


def test_submit_wait_waits_for_a_held_job_that_sacct_does_not_list_yet(server):
    """A held job has no row in sacct's listing (never eligible), yet the controller has it: -W waits for it."""
    waiting = subprocess.Popen([console_script("vipu"), "submit", "-W", "--parsable", "--hold", *QUICK],
                               env=server.env(), cwd=server.state_dir.parent, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        job = int(waiting.stdout.readline())
        assert waiting.poll() is None
        assert run(server, "vipu", "release", str(job)).returncode == 0
        assert waiting.wait(timeout=60) == 0 and waiting.stderr.read() == ""
        assert show(server, job)["state"] == "COMPLETED"
    finally:
        waiting.kill()
        waiting.wait()
