"""An upgrade keeps state: a state folder written by the previous release's code (checked out from git) is served
by this version with every job, and a database from a newer version is refused with one line (issue 23, 7)."""

from __future__ import annotations

import io
import json
import os
import select
import sqlite3
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import run
from tests.conftest import LISTENING, console_script
from tests.server.test_startup import start
from vipu.store_schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS_RELEASE = "4a103da"  # the last landing before the schema was numbered (user_version 0)
PYTHON = str(Path(console_script("vipu")).parent / "python")


@pytest.fixture
def previous(tmp_path) -> Path:
    """The previous release's package, unpacked where PYTHONPATH finds it before the installed one."""
    got = subprocess.run(["git", "-C", str(ROOT), "archive", PREVIOUS_RELEASE, "vipu"], capture_output=True)
    if got.returncode != 0:
        pytest.skip(f"no git history with {PREVIOUS_RELEASE} here: {got.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(got.stdout)) as tar:
        tar.extractall(tmp_path / "previous", filter="data")
    return tmp_path / "previous"


def test_state_written_by_the_previous_release_is_served_by_this_one(server_factory, previous, tmp_path):
    state, env = tmp_path / "state", {"PYTHONPATH": str(previous)}
    old = subprocess.Popen(
        [PYTHON, "-c", "import sys; from vipu.server.app import main; sys.exit(main())", "--pod", "bow-pod16",
         "--port", "0", "--metrics-port", "-1", "--ray", "off", "--state-dir", str(state)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
        cwd=tmp_path)  # not the checkout's folder, whose vipu/ `python -c` would import first
    try:
        ready, _, _ = select.select([old.stdout], [], [], 60)
        port = LISTENING.search(old.stdout.readline() if ready else "").group(2)
        cli = [PYTHON, "-c", "from vipu.cli.main import run; run()", "--api-port", port]
        for args in (["--name", "kept", "--ipus", "4", "--hold"], ["--name", "ran", "--ipus", "1",
                                                                 "--duration", "0.1s"]):
            out = subprocess.run([*cli, "submit", *args], capture_output=True, text=True,
                                 env={**os.environ, **env}, timeout=60, cwd=tmp_path)
            assert out.returncode == 0, out.stderr
        with sqlite3.connect(state / "vipu.sqlite3") as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == 0  # truly the old code
        skew = subprocess.run([console_script("vipu"), "--api-port", port, "submit", "--ipus", "1", "--hold"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)  # this release's CLI
        assert skew.returncode == 2 and skew.stderr.startswith(  # regression: "submit_dir: unknown field; remove it"
            f"vipu: error: the controller at localhost:{port} runs an earlier vipu-sim than this CLI: it does not know"
            " submit_dir, which this vipu sends with every submit; upgrade the controller"), skew.stderr
    finally:
        old.kill()
        old.communicate()
    server = server_factory(pod="bow-pod16", state_dir=state)
    jobs = {name: _show(server, job) for name, job in (("kept", 1), ("ran", 2))}
    assert (jobs["kept"]["state"], jobs["kept"]["ipus"], jobs["kept"]["reason"]) == ("PENDING", 4, "JobHeldUser")
    assert jobs["ran"]["name"] == "ran"
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip() == "3"
    with sqlite3.connect(state / "vipu.sqlite3") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_database_from_a_newer_version_is_refused_in_one_line(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with sqlite3.connect(state / "vipu.sqlite3") as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    (state / "vipu.sqlite3").chmod(0o600)
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2 and out.stderr.strip() == (
        f"vipu-server: error: the state database {state / 'vipu.sqlite3'} was written by a newer vipu-sim (schema"
        f" {SCHEMA_VERSION + 1}; this version reads up to {SCHEMA_VERSION}); run that version or a later one, or give"
        " another --state-dir"
    ), out.stderr


def _show(server, job: int) -> dict:
    out = run(server, "vipu", "show", "job", str(job), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
