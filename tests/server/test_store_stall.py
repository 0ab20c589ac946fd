"""A really stalled disk: the state folder on an ext4 loop mount frozen with fsfreeze, so every write (and a read
that needs to write SQLite's -shm) blocks in the kernel (issue 23, finding 9). Changes answer UNAVAILABLE within the
write timeout, saying whether they were made; health says NOT_SERVING; reads of the live queue answer; after the
thaw health says SERVING and the store holds exactly what callers were told; a SIGTERM stops the controller in time.

Needs root (mount, fsfreeze); skipped otherwise, saying why. The mount is thawed and unmounted in any case: a frozen
filesystem left behind would hang whatever touches it next."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs as queue_of
from tests.conftest import ServerProcess
from tests.server.test_store_failures import health
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_pb2_grpc

SPEC = b"{ipus: 1, hold: true}"
TIMEOUT_S = 1.0  # --write-timeout
MARGIN_S = 2.0  # an answer's time beyond the write timeout, on a loaded 2-core machine


def sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


@contextmanager
def loop_mount(folder: Path):
    """An ext4 filesystem of its own at `folder`, unmounted (thawed first) at the end."""
    if os.geteuid() != 0:
        pytest.skip("needs root: a loop mount and fsfreeze make the stalled disk")
    missing = [tool for tool in ("mkfs.ext4", "mount", "umount", "fsfreeze") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} to make a stalled disk")
    image = folder.parent / "disk.img"
    folder.mkdir()
    for cmd in (("truncate", "-s", "64M", str(image)), ("mkfs.ext4", "-q", str(image)),
                ("mount", "-o", "loop", str(image), str(folder))):
        out = sh(*cmd)
        if out.returncode != 0:
            pytest.skip(f"cannot make a loop mount to freeze ({' '.join(cmd)}: {out.stderr.strip()})")
    try:
        yield folder
    finally:
        sh("fsfreeze", "-u", str(folder))  # (fails harmlessly when it is not frozen)
        out = sh("umount", str(folder))
        if out.returncode != 0:
            sh("umount", "-l", str(folder))  # detached now, gone once its last user closes it
        assert out.returncode == 0, out.stderr


def freeze(folder: Path) -> None:
    out = sh("fsfreeze", "-f", str(folder))
    if out.returncode != 0:
        pytest.skip(f"fsfreeze does not work here: {out.stderr.strip()}")


def wait_for(condition, within: float) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class LoggedBeside(ServerProcess):
    """A server whose log is not on the disk that freezes (a log write would block the stop's last line)."""

    @property
    def log_path(self) -> Path:
        return self.state_dir.parent.parent / "server.stderr"


def writable_metric(server) -> float:
    text = urllib.request.urlopen(server.metrics_url, timeout=10).read().decode()
    return float(re.search(r"^vipu_store_writable (\S+)$", text, re.M).group(1))


def test_a_frozen_disk_answers_in_time_and_the_store_holds_what_callers_were_told(tmp_path):
    with loop_mount(tmp_path / "fz") as folder:
        server = LoggedBeside(state_dir=folder / "state", extra=["--write-timeout", f"{TIMEOUT_S:g}"])
        try:
            server.start()
            with grpc.insecure_channel(server.address) as channel:
                jobs = job_pb2_grpc.JobServiceStub(channel)
                [before] = jobs.SubmitJob(j.SubmitJobRequest(spec=SPEC), timeout=10).job_ids
                freeze(folder)
                started = time.monotonic()
                with pytest.raises(grpc.RpcError) as stuck:
                    jobs.SubmitJob(j.SubmitJobRequest(spec=SPEC), timeout=30)
                assert time.monotonic() - started < TIMEOUT_S + MARGIN_S
                assert stuck.value.code() == grpc.StatusCode.UNAVAILABLE
                # its write is the one in the kernel (not known), or queued behind a checkpoint's (dropped)
                unknown = "whether this change is stored is not known until that write ends: once health says" \
                          " SERVING, check with `vipu queue` or `vipu show job` before retrying"
                dropped = "so nothing changed: fix the disk, then retry"
                assert unknown in stuck.value.details() or dropped in stuck.value.details(), stuck.value.details()
                kept = [before + 1] if unknown in stuck.value.details() else []
                assert health(channel) == health_pb2.HealthCheckResponse.NOT_SERVING
                assert writable_metric(server) == 0
                refused = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--wrap", "true")
                assert refused.returncode == 5, refused.stderr
                assert "cannot be written just now (no write finished in 1 s: a stalled disk), so nothing changed: let" \
                       " the disk answer again" in refused.stderr
                assert sorted(queue_of(server)) == [before]  # the live queue answers from memory
                shown = run(server, "vipu", "show", "job", str(before))
                assert shown.returncode == 0 and "JobState=PENDING" in shown.stdout, shown.stderr
                started = time.monotonic()
                history = run(server, "vipu", "history")  # on disk only: says so, in time
                assert history.returncode == 5 and "the live queue still answers" in history.stderr, history.stderr
                assert time.monotonic() - started < TIMEOUT_S + MARGIN_S + 1  # (+1: the CLI's own start)
                sh("fsfreeze", "-u", str(folder))
                assert wait_for(lambda: health(channel) == health_pb2.HealthCheckResponse.SERVING, 30)
                assert writable_metric(server) == 1
                listed = [x.id for x in jobs.ListJobs(j.ListJobsRequest(), timeout=10).jobs]
                assert listed == [before, *kept]  # a dropped change is not there; the one not known ended well
                if kept:
                    assert f"the write that stalled has ended: jobs {before + 1}, whose callers were told it was" \
                           " not known, are stored" in server.stderr_text()
                [after] = jobs.SubmitJob(j.SubmitJobRequest(spec=SPEC), timeout=10).job_ids
                assert after == before + 1 + len(kept)  # the refused submits took no id, and writes work again
                freeze(folder)
                started = time.monotonic()
                server.proc.send_signal(signal.SIGTERM)
                said = "stopping without waiting for it: every change a caller was told was made is stored"
                assert wait_for(lambda: said in server.stderr_text(), TIMEOUT_S + 10), server.stderr_text()[-2000:]
                stopped = time.monotonic() - started
            sh("fsfreeze", "-u", str(folder))
            assert server.proc.wait(timeout=30) == 5
            assert stopped < TIMEOUT_S + 10
            db = sqlite3.connect(folder / "state" / "vipu.sqlite3")  # nothing a caller was told was made is lost
            try:
                stored = db.execute("SELECT CAST(name AS INTEGER) FROM records WHERE kind = 'job' ORDER BY 1")
                assert [i for (i,) in stored] == [before, *kept, after]
            finally:
                db.close()
        finally:
            sh("fsfreeze", "-u", str(folder))
            server.kill(signal.SIGKILL)
            if server.proc is not None:
                server.proc.stdout.close()


def test_a_stop_held_by_a_frozen_disk_says_where_it_is_and_a_second_signal_ends_it(tmp_path):
    """The disk freezes under an idle controller whose --write-timeout is an hour: its stop waits for the disk (to
    close the store), says which step it is in, and a second SIGTERM ends it at once, naming that step."""
    with loop_mount(tmp_path / "fz") as folder:
        server = LoggedBeside(state_dir=folder / "state", extra=["--write-timeout", "3600"])
        try:
            server.start()
            freeze(folder)
            server.proc.send_signal(signal.SIGTERM)
            notice = re.compile(r"still stopping after \d+ s: (.+) \(signal again to stop at once\)")
            assert wait_for(lambda: notice.search(server.stderr_text()), 60), server.stderr_text()[-2000:]
            step = notice.search(server.stderr_text()).group(1)
            server.proc.send_signal(signal.SIGTERM)
            said = f"the stop gave up (a second signal asked to stop at once) while {step}; threads still running: "
            assert wait_for(lambda: said in server.stderr_text(), 30), server.stderr_text()[-2000:]
            assert "the main thread was in " in server.stderr_text().split(said)[1].splitlines()[0]
            sh("fsfreeze", "-u", str(folder))
            assert server.proc.wait(timeout=30) == 0  # asked for
        finally:
            sh("fsfreeze", "-u", str(folder))
            server.kill(signal.SIGKILL)
            if server.proc is not None:
                server.proc.stdout.close()
