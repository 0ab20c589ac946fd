"""ray41: a program's run on a Ray node whose end its supervisor recorded there while no controller heard is read there
by the restarted controller, once Ray is connected; a run whose node has left the cluster ends NODE_FAIL at the
restart, saying so.

Regression: the restart read exit records only in its own machine's spool, before Ray was connected, and the run's
node was not stored. On a cluster the run's node is another host, whose spool the controller's machine may never have
had (no run there): its restart drew a new one, so the run ended at the restart, its exit code unknown and the outage
counted as run time. Here the controller is restarted with a temporary folder of its own (another host's /tmp, as
far as its spool goes) on the session's Ray node, which stands for the run's node; the plane is stopped as a kill -9
leaves its store (runs RUNNING, their ends untold), since an in-process plane cannot be killed.
"""

from __future__ import annotations

import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import pytest
import ray

from vipu.access import ANYONE
from vipu.control.job_ops import SubmitRequest
from vipu.control.lock import StateLock
from vipu.control.queue_rebuild import recover_stored
from vipu.control.startup import DATABASE, open_plane
from vipu.jobs.programs.program_record import ProgramRecord
from vipu.jobs.programs.run_exits import exit_path
from vipu.scheduler.job_states import JobState
from vipu.store import Store

WAIT_S = 60  # a bound only a broken run reaches (a machine actor's first start on a loaded machine takes seconds)
ENDS_ON_TERM = "#!/bin/bash\ntrap 'exit 3' TERM\necho start > started-$SLURM_JOB_ID\nwhile true; do sleep 0.02; done\n"
GONE = "0" * 56  # a Ray node id the cluster does not have: a node that has left it


def wait_until(condition) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():  # (a poll: the events are another process's files)
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.02)


def on_ray(state, **options):
    plane = open_plane("bow-pod16", state, "127.0.0.1", 8090, **options)
    plane.use_machines("auto", 2.0)  # the session's Ray, connected already
    return plane


def started(plane, script: str, folder) -> tuple[int, str]:
    """A job running `script` in `folder` submitted and started: its id, and its runs' spool."""
    spec = {"ipus": 1, "time_limit": "5m", "requeue": False,
            "workload": {"kind": "command", "script": script, "submit_dir": str(folder)}}
    [done] = plane.jobs.submit([SubmitRequest(json.dumps(spec).encode(), {})], ANYONE)
    plane.step()
    return done.jobs[0].id, plane.runners["command"].spool


def stopped(plane) -> None:
    """As the controller's process ends: its runs stopped, then its actors gone (those of its runs' nodes too)."""
    plane.stop()
    for actor in plane.runners["command"].nodes.all():
        ray.kill(actor)
    plane.stop_machines()
    plane.store.close()


@pytest.fixture
def controller_tmp(tmp_path, monkeypatch):
    """The restarted controller's own temporary folder, where the run's node's spool is not."""
    def elsewhere():
        folder = tmp_path / "controller-tmp"
        folder.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return elsewhere


@pytest.fixture
def asked_under_lock(monkeypatch):
    """The calls into Ray that run_nodes.py made while its thread held the state lock, which every RPC waits for:
    none may be, since a node may take ASK_WAIT_S to answer (or never). Regression: a restart's recovery asked each
    run's node under the lock, one after another, and so did the end of an old run's KillWait."""
    holders, asked = set(), []
    enter, leave, get, wait = StateLock.__enter__, StateLock.__exit__, ray.get, ray.wait

    def entered(lock):
        held = enter(lock)
        holders.add(threading.get_ident())
        return held

    def left(lock, *exc):
        holders.discard(threading.get_ident())
        return leave(lock, *exc)

    def watched(call):
        def called(*args, **kwargs):
            here = os.path.join("programs", "run_nodes.py")
            where = [f for f in traceback.extract_stack() if f.filename.endswith(here)]
            if threading.get_ident() in holders and where:
                asked.append(f"{call.__name__} in {where[-1].name}")
            return call(*args, **kwargs)
        return called

    monkeypatch.setattr(StateLock, "__enter__", entered)
    monkeypatch.setattr(StateLock, "__exit__", left)
    monkeypatch.setattr(ray, "get", watched(get))
    monkeypatch.setattr(ray, "wait", watched(wait))
    return asked


def test_a_runs_end_recorded_on_its_node_is_read_there_once_ray_is_connected(ray_session, tmp_path, controller_tmp,
                                                                              asked_under_lock):
    state = tmp_path / "state"
    plane = on_ray(state)
    spec = {"ipus": 1, "time_limit": "5m", "requeue": False,
            "workload": {"kind": "command", "script": ENDS_ON_TERM, "submit_dir": str(tmp_path)}}
    done = plane.jobs.submit([SubmitRequest(json.dumps(spec).encode(), {}) for _ in range(2)], ANYONE)
    ran, lost = [job.id for x in done for job in x.jobs]
    plane.step()
    runs = plane.runners["command"]
    spool = runs.spool
    try:
        wait_until(lambda: all((tmp_path / f"started-{j}").exists() for j in (ran, lost)))
        stored = plane.store.get("program_run", str(ran), ProgramRecord)
        assert (stored.node, stored.spool) == (ray_session.get_runtime_context().get_node_id(), spool)
        assert stored.node_address  # its node, stored before its supervisor started there
        started = plane.scheduler.table.jobs[ran].start_time
        stopped(plane)  # its supervisors stop the programs (trap: exit 3) and record how they ended
        wait_until(lambda: all(exit_path(spool, j, 1).exists() for j in (ran, lost)))
        recorded = json.loads(exit_path(spool, ran, 1).read_text())
        assert (recorded["exit_code"], recorded["signal"]) == (3, 0)
        store = Store(state / DATABASE)
        moved = store.get("program_run", str(lost), ProgramRecord).model_copy(update={"node": GONE})
        store.commit([("program_run", str(lost), moved)], [])  # as if its node had left since
        store.close()

        controller_tmp()
        restarted = on_ray(state, recover_later=True)
        try:
            assert restarted.runners["command"].spool != spool  # its own machine has no spool of the run's
            assert restarted.scheduler.table.jobs == {}  # the queue waits for Ray
            restarted.start_machines()
            recover_stored(restarted)
            read = restarted.scheduler.table.jobs[ran]
            assert (read.state, read.exit_code, read.exit_signal) == (JobState.NODE_FAIL, 3, 0)
            assert read.end_time == pytest.approx(recorded["at"], abs=0.01)  # the program's end, not the restart's
            assert read.end_time - started < time.time() - started - 0.01
            assert "as recorded where it ran" in read.recovery
            restarted.runners["command"].forget(ran)  # its end written, the job left memory (scheduler/purge.py)
            wait_until(lambda: not exit_path(spool, ran, 1).exists())  # so the record read on its node goes
            gone = restarted.scheduler.table.jobs[lost]
            assert (gone.state, gone.exit_code) == (JobState.NODE_FAIL, None)
            assert gone.end_time > recorded["at"]  # the restart's
            ended = restarted.runners["command"].record(lost).summary()["ended"]  # `vipu show job`: Ended=
            assert ended == (f"its Ray node ({stored.node_address}, Ray node {GONE}) has left the Ray cluster, and"
                             " with it the record of how its program ended")
        finally:
            stopped(restarted)
        again = open_plane("bow-pod16", state, "127.0.0.1", 8090)  # written: a later start reads the same
        try:
            assert again.scheduler.table.jobs[ran].exit_code == 3
            assert again.runners["command"].record(lost).ended == ended
            assert asked_under_lock == []
        finally:
            stopped(again)
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def test_a_restart_without_ray_says_why_a_run_on_a_ray_node_ended_unknown(tmp_path, controller_tmp):
    """A run stored as on a Ray node, restarted with --ray off: it ends NODE_FAIL at the restart, its exit code
    unknown, and its record says why (`vipu show job`: Ended=). Regression: nothing said why."""
    state = tmp_path / "state"
    plane = open_plane("bow-pod16", state, "127.0.0.1", 8090)
    job, spool = started(plane, ENDS_ON_TERM, tmp_path)
    try:
        wait_until(lambda: (tmp_path / f"started-{job}").exists())
        stopped(plane)
        store = Store(state / DATABASE)
        moved = store.get("program_run", str(job), ProgramRecord).model_copy(
            update={"node": GONE, "node_address": "192.0.2.2"})
        store.commit([("program_run", str(job), moved)], [])  # as if it had run on a Ray node
        store.close()
        controller_tmp()
        restarted = open_plane("bow-pod16", state, "127.0.0.1", 8090)
        try:
            ended = restarted.scheduler.table.jobs[job]
            assert (ended.state, ended.exit_code) == (JobState.NODE_FAIL, None)
            assert restarted.runners["command"].record(job).summary()["ended"] == (
                "the controller restarted not connected to Ray (--ray off), so its Ray node"
                f" (192.0.2.2, Ray node {GONE}) was not asked how its program ended")
        finally:
            stopped(restarted)
    finally:
        shutil.rmtree(spool, ignore_errors=True)


# deaf to SIGTERM: only a SIGKILL ends it (the test's, long before KillWait's)
DEAF_TO_TERM = "#!/bin/bash\ntrap '' TERM\necho $$ > pid\nwhile true; do sleep 0.02; done\n"


def test_a_run_still_ending_on_its_node_keeps_its_partition_after_the_restart(ray_session, tmp_path, controller_tmp,
                                                                              asked_under_lock):
    """The restarted controller keeps the partition of a run whose supervisor still holds its lock on the run's
    node (its program in KillWait), as it does for one on its own machine (run_locks.py); once it has gone, the
    partition goes and the run's ExitCode is what its node recorded. Regression: only the controller's own
    machine was looked at, so the IPUs were let go while the program still ran."""
    state = tmp_path / "state"
    plane = on_ray(state, kill_wait_s=60.0)
    job, spool = started(plane, DEAF_TO_TERM, tmp_path)
    try:
        wait_until(lambda: (tmp_path / "pid").exists())
        stopped(plane)  # its supervisor sends SIGTERM, which the program does not hear
        controller_tmp()
        restarted = on_ray(state, kill_wait_s=60.0, recover_later=True)
        try:
            restarted.start_machines()
            recover_stored(restarted)
            kept = restarted.scheduler.job(job)
            assert (kept.state, kept.exit_code) == (JobState.COMPLETING, None)  # still ending, on its node
            assert list(restarted.controller.state.partitions) == [f"slurm_{job}"]
            os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)
            wait_until(lambda: not restarted.controller.state.partitions)  # its node's lock let go: the IPUs too
            ended = restarted.scheduler.table.jobs[job]
            assert (ended.state, ended.exit_code, ended.exit_signal) == (JobState.NODE_FAIL, 0, 9)
            assert asked_under_lock == []
        finally:
            stopped(restarted)
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def test_a_ray_cluster_that_does_not_answer_leaves_a_runs_end_unknown_saying_why(tmp_path):
    """Asking runs' nodes when Ray's GCS does not answer (here: none was ever started in the process) says why in each
    run's record, and returns. Regression: the error went up through the restart's recovery (vipu-server exited, and
    would again at each start while Ray stays so) or the thread that ends an old run, which then never let go of its
    partition."""
    code = """
from pathlib import Path
from types import SimpleNamespace
from vipu.store import Store
from vipu.jobs.programs.program_record import ProgramRecord
from vipu.jobs.programs.run_nodes import RunNodes
record = ProgramRecord(name="7", run=1, output="out", node="n1", node_address="192.0.2.2", spool="/tmp/spool")
nodes = RunNodes()
nodes.ask([SimpleNamespace(id=7)], lambda job_id: record)
store = Store(Path("state.db"))
assert nodes.recorded_end(SimpleNamespace(id=7, runs_started=1), record, store) is None
print(store.get("program_run", "7", ProgramRecord).ended)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("the Ray cluster did not say which nodes are live (RaySystemError: ")
    assert done.stdout.rstrip().endswith(", so its Ray node (192.0.2.2, Ray node n1) was not asked how its program"
                                         " ended")
