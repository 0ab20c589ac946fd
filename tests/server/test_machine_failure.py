"""A machine actor killed under a running job: its IPUs are marked failed, the job ends NODE_FAIL and is requeued
under the same id onto healthy machines; an admin repair puts the IPUs back."""

from __future__ import annotations

import json

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for


def test_killing_a_machine_requeues_its_job_elsewhere(server_factory):
    server = server_factory(extra=["--ray", "local"])
    [job] = submit(server, "--name", "victim", "--ipus", "8", "--time-limit", "10m")
    first = wait_for(lambda: (j := show(server, job))["state"] == "RUNNING" and j, timeout=30)
    assert first["detail"]["first_ipu"] == 0
    # the job's machines get actors in the background; kill machine 0's once it exists
    wait_for(lambda: run(server, "vipu-admin", "kill", "machine", "0").returncode == 0, timeout=90)

    def moved():
        detail = show(server, job)
        return detail["state"] == "RUNNING" and detail["requeue_count"] == 1 and detail

    again = wait_for(moved, timeout=60)
    assert again["detail"]["first_ipu"] not in range(0, 4)
    assert "NODE_FAIL" in [h["state"] for h in again["detail"]["history"]]
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert [i["state"] for i in ipus[:4]] == ["failed"] * 4

    repaired = run(server, "vipu-admin", "repair", "ipus", "0", "1", "2", "3", "--json")
    assert repaired.returncode == 0 and json.loads(repaired.stdout) == [0, 1, 2, 3]
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert [i["state"] for i in ipus[:4]] == ["idle"] * 4
