"""A machine actor killed under a running job: its IPUs are marked failed, the job ends NODE_FAIL and is requeued
under the same id onto healthy machines, its logs follow the new run; an admin repair puts the IPUs back. A stop
under a training run is no machine failure."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import yaml

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_killing_a_machine_requeues_its_job_elsewhere(ray_session, server_factory, tmp_path):
    # on the session's Ray: a second local Ray beside it once failed to start in time on a loaded machine. Health
    # checks far apart, so that the training job below must notice its lost machine itself
    address = ray_session.get_runtime_context().gcs_address
    server = server_factory(extra=["--ray", address, "--health-check-interval", "8"])
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

    # a training job loses a machine in the middle of a collective: NODE_FAIL and requeued too (not FAILED, as its
    # transport's error once made it), and the lost machine's IPUs are out of service before it is placed again
    spec = yaml.safe_load((ROOT / "examples/tiny_tp.yaml").read_text())
    spec["workload"]["steps"] = 1_000_000  # still training when the machine goes
    (tmp_path / "long_tp.yaml").write_text(yaml.safe_dump(spec))
    [train] = submit(server, str(tmp_path / "long_tp.yaml"))
    wait_for(lambda: run(server, "vipu", "logs", str(train)).stdout.count(" loss ") >= 2, timeout=120)
    machine = show(server, train)["detail"]["first_ipu"] // 4
    assert run(server, "vipu-admin", "kill", "machine", str(machine)).returncode == 0

    def requeued():
        detail = show(server, train)
        return detail["requeue_count"] == 1 and detail

    detail = wait_for(requeued, timeout=60)["detail"]
    states = [h["state"] for h in detail["history"]]
    assert "NODE_FAIL" in states and "FAILED" not in states, states
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert [i["state"] for i in ipus[4 * machine: 4 * machine + 4]] == ["failed"] * 4

    # its logs follow the new run while it runs (they once showed only after a cancel), below the lost run's end
    def steps() -> list[str]:
        lines = run(server, "vipu", "logs", str(train)).stdout.splitlines()
        return [line for line in lines if line.startswith("step ")]

    wait_for(lambda: len(steps()) >= 2 and steps()[0].startswith("step    0"), timeout=120)
    # once the lost run's thread has failed, the logs still follow the new run
    wait_for(lambda: f"job {train}: run 1 ended under its training" in server.stderr_text(), timeout=60)
    lines = run(server, "vipu", "logs", str(train)).stdout.splitlines()
    assert lines[0].startswith("run 1 ended NODE_FAIL at ") and lines[0].endswith(
        f": machine {machine} was lost; requeued"), lines[:3]
    assert not any("training failed" in line or "NotFound" in line for line in lines)
    more = len(steps())
    wait_for(lambda: len(steps()) > more, timeout=60)
    assert f"EarlierRun={lines[0]}" in run(server, "vipu", "show", "job", str(train)).stdout.splitlines()

    # a clean stop under the new run: the run ends with the controller, which is no hardware failure (the stop
    # killed the machines' actors under it, and the run ended NODE_FAIL for a lost machine); the restart ends it
    stopping = time.monotonic()
    server.kill(signal.SIGTERM)
    assert server.proc.returncode == 0 and time.monotonic() - stopping < 15
    server.extra = ["--ray", "off"]
    server.start()
    detail = show(server, train)
    assert detail["requeue_count"] == 2 and "requeued: its workload does not outlive the controller" in detail[
        "detail"]["recovery"], detail
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert [n for n, i in enumerate(ipus) if i["state"] == "failed"] == list(range(4 * machine, 4 * machine + 4))
