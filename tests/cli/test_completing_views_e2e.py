"""A job held in COMPLETING (cancelled, its program deaf to SIGTERM and given KillWait) as every view of IPUs and
machines shows it, against a real controller: its IPUs completing in `vipu list ipus`, `vipu info`, `vipu top` and
vipu_ipus, its machine comp in `vipu info -N`, as sinfo shows a COMPLETING node; idle once its program has ended.
One controller and one program for the module: each view is read at both moments, and each test checks one."""

from __future__ import annotations

import json
import signal
import urllib.request

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_filters_e2e import DEAF
from tests.conftest import ServerProcess
from tests.jobs.programs.test_programs_e2e import spec_file


def _views(server) -> dict:
    """What each view says now."""
    def out(*args: str) -> str:
        done = run(server, *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    with urllib.request.urlopen(server.metrics_url, timeout=10) as reply:
        metrics = reply.read().decode()
    return {"ipus": json.loads(out("vipu", "list", "ipus", "--json")), "info": out("vipu", "info"),
            "info_json": json.loads(out("vipu", "info", "--json")),
            "nodes": json.loads(out("vipu", "info", "-N", "--json"))["nodes"],
            "node_lines": out("vipu", "info", "-N", "-h", "-o", "%N|%t|%C").split(), "top": out("vipu", "top", "--once"),
            "metrics": metrics.splitlines()}


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    """Job `deaf` (4 IPUs) cancelled while job `running` (8 IPUs) runs on, on a Bow-Pod64: the views while deaf's
    program is still ending ("completing") and once it has ("ended"), and deaf's machine."""
    tmp = tmp_path_factory.mktemp("completing")
    server = ServerProcess(state_dir=tmp / "state", extra=["--kill-wait", "120"]).start()
    try:
        [deaf] = submit(server, spec_file(tmp, DEAF, "deaf"))
        wait_for(lambda: (tmp / f"started.{deaf}").exists(), timeout=30)
        [running] = submit(server, "--ipus", "8", "--time-limit", "10m")
        wait_for(lambda: show(server, running)["state"] == "RUNNING")
        assert run(server, "vipu", "cancel", str(deaf)).returncode == 0
        wait_for(lambda: show(server, deaf)["state"] == "COMPLETING")
        completing = _views(server)
        assert show(server, deaf)["state"] == "COMPLETING"  # still, after every view was read
        (tmp / "stop").touch()
        wait_for(lambda: show(server, deaf)["state"] == "CANCELLED", timeout=30)
        ended = _views(server)
    finally:
        server.kill(signal.SIGTERM)
    [machine] = {i["agent"] for i in completing["ipus"] if i["partition"] == f"slurm_{deaf}"}
    return {"completing": completing, "ended": ended, "deaf": deaf, "running": running, "machine": machine}


def test_list_ipus_shows_the_ipus_of_a_completing_job_completing_then_idle(seen):
    def states(view: str) -> dict[str, list[str]]:
        by: dict[str, list[str]] = {}
        for ipu in seen[view]["ipus"]:
            by.setdefault(ipu.get("partition", ""), []).append(ipu["state"])
        return by

    deaf, running = f"slurm_{seen['deaf']}", f"slurm_{seen['running']}"
    assert states("completing") == {deaf: ["completing"] * 4, running: ["allocated"] * 8, "": ["idle"] * 52}
    assert states("ended") == {running: ["allocated"] * 8, "": ["idle"] * 56}


def test_info_counts_them_completing_apart_from_allocated_then_idle(seen):
    def row(view: str) -> list[str]:
        header, line = seen[view]["info"].splitlines()[:2]
        assert [c.strip() for c in header.split("|")] == [
            "ILD", "IPUS", "IDLE", "ALLOCATED", "COMPLETING", "DRAINING", "DRAINED", "FAILED"]
        return [c.strip() for c in line.split("|")]

    assert row("completing") == ["pod64-0", "64", "52", "8", "4", "0", "0", "0"]
    assert row("ended") == ["pod64-0", "64", "56", "8", "0", "0", "0", "0"]
    [ild] = seen["completing"]["info_json"]["ilds"]
    assert (ild["allocated"], ild["completing"], ild["idle"]) == (8, 4, 52)
    assert f", 1 completing (comp: {seen['machine']})," in seen["completing"]["info"]
    assert seen["ended"]["info_json"]["ilds"][0].get("completing", 0) == 0


def test_info_nodes_show_its_machine_comp_with_its_ipus_completing_then_idle(seen):
    """sinfo -N: COMPLETING; its CPUs allocated in %C (A/I/O/T), as sinfo counts a completing node's."""
    machine = seen["machine"]
    [node] = [n for n in seen["completing"]["nodes"] if n["name"] == machine]
    assert (node["state"], node["completing"], node["allocated"], node["idle"]) == ("completing", 4, 0, 0)
    assert f"{machine}|comp|4/0/0/4" in seen["completing"]["node_lines"]
    [node] = [n for n in seen["ended"]["nodes"] if n["name"] == machine]
    assert (node["state"], node["completing"], node["idle"]) == ("idle", 0, 4)
    assert f"{machine}|idle|0/4/0/4" in seen["ended"]["node_lines"]


def test_top_marks_them_c_and_counts_them_completing_then_idle(seen):
    def machine_row(view: str) -> list[str]:
        [row] = [line.split("│") for line in seen[view]["top"].splitlines() if f" {seen['machine']} " in line]
        return [c.strip() for c in row]

    assert "64 IPUs  8 allocated  4 completing  52 idle  0 failed" in seen["completing"]["top"]
    assert machine_row("completing")[2] == "cccc"
    assert "64 IPUs  8 allocated  56 idle  0 failed" in seen["ended"]["top"]
    assert machine_row("ended")[2] == "...."

    def job_row(view: str, job: int) -> list[str]:
        running = seen[view]["top"].split(" Running ")[1]  # (below the machines' table)
        [row] = [[c.strip() for c in line.split("│")] for line in running.splitlines() if line.startswith(f"{job} ")]
        return row

    # the completing job is listed with the running ones, marked CG, and counted apart in the title
    assert "| 1 running, 1 completing, 0 pending jobs" in seen["completing"]["top"]
    assert job_row("completing", seen["deaf"])[-1] == "CG" and job_row("completing", seen["running"])[-1] == "R"
    assert "| 1 running, 0 pending jobs" in seen["ended"]["top"]
    assert job_row("ended", seen["running"])[-1] == f"slurm_{seen['running']}"  # (no ST column without a CG job)


def test_vipu_ipus_has_a_completing_state_and_its_ipus_keep_their_job_join_until_they_are_idle(seen):
    def has(view: str, *lines: str) -> None:
        for line in lines:
            assert line in seen[view]["metrics"], line

    has("completing", 'vipu_ipus{ild="0",state="completing"} 4.0', 'vipu_ipus{ild="0",state="allocated"} 8.0',
        'vipu_ipus{ild="0",state="idle"} 52.0')
    has("ended", 'vipu_ipus{ild="0",state="completing"} 0.0', 'vipu_ipus{ild="0",state="allocated"} 8.0',
        'vipu_ipus{ild="0",state="idle"} 56.0')
    # the job counts as squeue shows it: COMPLETING while torn down (the dashboards' series read 0), then CANCELLED
    has("completing", 'vipu_jobs{state="COMPLETING"} 1.0', 'vipu_jobs{state="CANCELLED"} 0.0',
        'vipu_jobs{state="RUNNING"} 1.0')
    has("ended", 'vipu_jobs{state="COMPLETING"} 0.0', 'vipu_jobs{state="CANCELLED"} 1.0')
    for view, want in (("completing", 4), ("ended", 0)):
        held = [line for line in seen[view]["metrics"]
                if line.startswith("vipu_ipu_allocation_info{") and f'job_id="{seen["deaf"]}"' in line]
        assert len(held) == want, held
