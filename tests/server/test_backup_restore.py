"""README's backup and restore, as an operator runs it: an online copy with SQLite's backup, a clean stop, the copy
put in place, a start with first_job_id above the ids handed out since; nothing of the copy lost, no id twice."""

from __future__ import annotations

import signal
import sqlite3

import grpc

from vipu.v1 import job_pb2 as j, job_pb2_grpc


def submit_held(address: str, n: int) -> list[int]:
    with grpc.insecure_channel(address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        return [jobs.SubmitJob(j.SubmitJobRequest(spec=b"{ipus: 1, hold: true}"), timeout=30).job_ids[0]
                for _ in range(n)]


def job_ids(address: str) -> list[int]:
    with grpc.insecure_channel(address) as channel:
        reply = job_pb2_grpc.JobServiceStub(channel).ListJobs(j.ListJobsRequest(), timeout=30)
    return sorted(job.id for job in reply.jobs)


def test_a_restored_backup_serves_its_jobs_and_first_job_id_keeps_ids_unique(server_factory, tmp_path):
    server = server_factory(pod="bow-pod16")
    assert submit_held(server.address, 3) == [1, 2, 3]
    backup = tmp_path / "vipu-backup.sqlite3"
    with sqlite3.connect(server.state_dir / "vipu.sqlite3") as live, sqlite3.connect(backup) as copy:
        live.backup(copy)  # what `sqlite3 vipu.sqlite3 ".backup FILE"` does, while the controller writes
    assert submit_held(server.address, 2) == [4, 5]
    server.kill(signal.SIGTERM)
    assert server.proc.returncode == 0
    old = server.state_dir / "old"  # as README moves them: the database, its side files and the marker
    old.mkdir()
    for moved in [*server.state_dir.glob("vipu.sqlite3*"), *server.state_dir.glob("vipu.generation")]:
        moved.rename(old / moved.name)
    (server.state_dir / "vipu.sqlite3").write_bytes(backup.read_bytes())
    config = tmp_path / "scheduler.yaml"
    config.write_text("first_job_id: 1000\n")
    server.extra = ["--scheduler-config", str(config)]
    server.start()
    assert job_ids(server.address) == [1, 2, 3]  # jobs 4 and 5 came after the copy
    assert submit_held(server.address, 1) == [1000]
    # walk32: the next start took ids 4-999 for records lost with a damaged page, and quarantined each
    server.kill(signal.SIGTERM)
    server.start()
    assert job_ids(server.address) == [1, 2, 3, 1000] and submit_held(server.address, 1) == [1001]
    assert "in none of the tables" not in server.stderr_text()
    with sqlite3.connect(server.state_dir / "vipu.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM quarantine").fetchone() == (0,)
