"""Ended jobs leave the controller's memory after min_job_age and `vipu history`, `vipu show job` and request-id
retries find them on disk, across a restart."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

import grpc

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import submit, wait_for
from vipu.v1 import job_pb2 as j, job_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]


def in_history(server) -> set[int]:
    with sqlite3.connect(f"file:{server.state_dir / 'vipu.sqlite3'}?mode=ro", uri=True) as db:
        return {i for (i,) in db.execute("SELECT id FROM job_history")}


def history_ids(server, *args: str) -> list[str]:
    out = run(server, "vipu", "history", "--json", *args)
    assert out.returncode == 0, out.stderr
    return [int(x["id"]) for x in json.loads(out.stdout)]


def test_ended_jobs_move_to_the_on_disk_history_and_every_read_still_finds_them(server_factory, tmp_path):
    config = tmp_path / "scheduler.yaml"
    config.write_text("min_job_age: 1\n")
    server = server_factory(pod="bow-pod16", extra=["--scheduler-config", str(config)])
    with grpc.insecure_channel(server.address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        spec = b'{"name": "quick", "ipus": 1, "time_limit": "1m", "workload": {"kind": "sleep", "duration": 0}}'
        first = stub.SubmitJob(j.SubmitJobRequest(spec=spec, request_id="once"), timeout=10).job_ids
    ids = submit(server, "--name", "arr", "--ipus", "1", "--time-limit", "1m", "--duration", "0s", "--array", "0-1")
    wait_for(lambda: in_history(server) == {1, 2, 3}, timeout=30)
    assert sorted(history_ids(server)) == [1, 2, 3]
    assert history_ids(server, "-j", str(ids[0])) == ids  # an array id: its tasks, from the history
    shown = json.loads(run(server, "vipu", "show", "job", "1", "--json").stdout)
    assert (int(shown["id"]), shown["state"], shown["name"]) == (1, "COMPLETED", "quick")
    assert history_ids(server, "-S", "now+1hour", "-E", "now+2hours") == []
    cancel = run(server, "vipu", "cancel", "1")
    assert cancel.returncode != 0 and "job 1 has ended and left the queue (min_job_age)" in cancel.stderr
    dependent = run(server, "vipu", "submit", "--ipus", "1", "--duration", "0s", "-d", "afterok:1")
    assert dependent.returncode == 2 and \
        "-d/--dependency names job 1, which ended more than min_job_age ago" in dependent.stderr
    server.restart()  # the history is not loaded into memory, and nothing of it is lost
    assert in_history(server) == {1, 2, 3} and sorted(history_ids(server)) == [1, 2, 3]
    with grpc.insecure_channel(server.address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        again = stub.SubmitJob(j.SubmitJobRequest(spec=spec, request_id="once"), timeout=10).job_ids
    assert list(again) == list(first) == [1]  # a retry of a purged job's submit queues nothing new
    assert submit(server, "--ipus", "1", "--duration", "0s") == [4]


def test_a_history_read_over_many_stored_jobs_pages_without_parsing_them_all(server_factory, tmp_path):
    """A listing keeps light rows; each page reads its own records (a page of 2 from 300 stored jobs)."""
    config = tmp_path / "scheduler.yaml"
    config.write_text("min_job_age: 1\n")
    server = server_factory(pod="bow-pod16", extra=["--scheduler-config", str(config)])
    submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "0s", "--array", "0-299")
    wait_for(lambda: len(in_history(server)) == 300, timeout=60)
    with grpc.insecure_channel(server.address) as channel:
        stub = job_pb2_grpc.JobServiceStub(channel)
        page = stub.History(j.HistoryRequest(page_size=2), timeout=10)
        assert [x.id for x in page.jobs] == [1, 2] and page.total_size == 300 and page.next_page_token
        last = stub.History(j.HistoryRequest(limit=1), timeout=10)
        assert [x.array_task_id for x in last.jobs] == [299]


def test_a_training_jobs_logs_and_results_outlive_its_move_to_the_history(server_factory, tmp_path):
    config = tmp_path / "scheduler.yaml"
    config.write_text("min_job_age: 1\n")
    server = server_factory(pod="bow-pod16", extra=["--scheduler-config", str(config)])
    spec = yaml.safe_load((ROOT / "examples/tiny_dp.yaml").read_text())
    spec["workload"]["steps"] = 3
    (tmp_path / "short.yaml").write_text(yaml.safe_dump(spec))
    [job] = submit(server, str(tmp_path / "short.yaml"))
    wait_for(lambda: in_history(server) == {job}, timeout=60)
    logs = run(server, "vipu", "logs", str(job))
    assert logs.returncode == 0 and sum(line.startswith("step ") for line in logs.stdout.splitlines()) == 3, logs
    shown = run(server, "vipu", "show", "job", str(job)).stdout
    assert "JobState=COMPLETED" in shown and "Losses=" in shown, shown
    with sqlite3.connect(f"file:{server.state_dir / 'vipu.sqlite3'}?mode=ro", uri=True) as db:  # moved with the job
        assert db.execute("SELECT kind FROM records WHERE name = ?", (str(job),)).fetchall() == []
        assert db.execute("SELECT kind FROM job_history_records WHERE id = ?", (job,)).fetchall() == [("job_result",)]


def test_a_programs_run_record_moves_with_it_and_logs_still_show_its_output(server_factory, tmp_path):
    """Regression: program_run records stayed in the live records for ever."""
    config = tmp_path / "scheduler.yaml"
    config.write_text("min_job_age: 1\n")
    server = server_factory(pod="bow-pod16", extra=["--scheduler-config", str(config)])
    [job] = submit(server, "--ipus", "1", "-t", "1", "-D", str(tmp_path), "--wrap", "echo purged-but-kept")
    before = None

    def logged() -> bool:
        nonlocal before
        out = run(server, "vipu", "logs", str(job))
        before = out.stdout if out.returncode == 0 and "purged-but-kept" in out.stdout else None
        return before is not None

    wait_for(logged, timeout=60)
    wait_for(lambda: in_history(server) == {job}, timeout=60)
    assert run(server, "vipu", "logs", str(job)).stdout == before
    with sqlite3.connect(f"file:{server.state_dir / 'vipu.sqlite3'}?mode=ro", uri=True) as db:
        assert db.execute("SELECT kind FROM records WHERE name = ?", (str(job),)).fetchall() == []
        assert db.execute("SELECT kind FROM job_history_records WHERE id = ?", (job,)).fetchall() == [("program_run",)]
