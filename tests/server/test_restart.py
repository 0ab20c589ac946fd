"""A controller killed with SIGKILL and restarted has every partition, allocation, agent and user it had."""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import time

import grpc
from google.protobuf.json_format import MessageToDict

from tests.conftest import console_script
from vipu.control.queue_rebuild import cycle_collection_paused
from vipu.v1 import admin_pb2 as a, admin_pb2_grpc, job_pb2 as j, job_pb2_grpc, partition_pb2 as p, partition_pb2_grpc


def snapshot(address: str) -> dict:
    with grpc.insecure_channel(address) as channel:
        parts = partition_pb2_grpc.PartitionServiceStub(channel)
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        replies = {
            "partitions": parts.ListPartitions(p.ListPartitionsRequest(), timeout=5),
            "allocations": parts.ListAllocations(p.ListAllocationsRequest(), timeout=5),
            "ipus": parts.ListIpus(p.ListIpusRequest(), timeout=5),
            "agents": admin.ListAgents(a.ListRequest(), timeout=5),
            "clusters": admin.ListClusters(a.ListRequest(), timeout=5),
            "users": admin.ListUsers(a.ListRequest(), timeout=5),
        }
    return {k: MessageToDict(v) for k, v in replies.items()}


def test_sigkill_then_restart_keeps_everything(server):
    with grpc.insecure_channel(server.address) as channel:
        parts = partition_pb2_grpc.PartitionServiceStub(channel)
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        admin.CreateUser(a.CreateUserRequest(name="alice"), timeout=5)
        admin.RemoveAgent(a.NameRequest(name="ag15"), timeout=5)
        admin.CreateAgent(a.CreateAgentRequest(name="spare", host="10.0.0.9", port=8080, machine=15), timeout=5)
        admin.CreateAllocation(a.CreateAllocationRequest(name="team", agents=["ag12", "ag13"], users=["alice"]), timeout=5)
        for name, size in [("p1", 16), ("p2", 1), ("p3", 2), ("p4", 8)]:
            parts.CreatePartition(p.CreatePartitionRequest(name=name, size=size), timeout=5)
        parts.CreatePartition(p.CreatePartitionRequest(name="t", size=4, allocation="team", num_gcds=2), timeout=5)
        parts.AcquirePartition(p.HoldPartitionRequest(name="p4", holder="job-7"), timeout=5)
        parts.RemovePartition(p.RemovePartitionRequest(name="p2"), timeout=5)
    before = snapshot(server.address)

    server.kill(signal.SIGKILL)
    assert server.proc.returncode == -signal.SIGKILL
    server.start()

    assert snapshot(server.address) == before
    assert {x["name"] for x in before["partitions"]["partitions"]} == {"p1", "p3", "p4", "t"}


def test_restart_with_another_pod_is_refused_with_a_fix(server):
    server.kill(signal.SIGKILL)
    out = subprocess.run(
        [console_script("vipu-server"), "--pod", "bow-pod16", "--port", "0", "--state-dir", str(server.state_dir)],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 2
    assert "belongs to pod 'bow-pod64'" in out.stderr and "--state-dir" in out.stderr


def test_bad_pod_file_is_refused_with_the_field(tmp_path):
    bad = tmp_path / "pod.yaml"
    bad.write_text("name: site\nmachine_preset: bow-2000\nilds: 1\nmachines_per_ild: 24\nild_topology: torus\n")
    out = subprocess.run(
        [console_script("vipu-server"), "--pod", str(bad), "--port", "0", "--state-dir", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 2 and "machines_per_ild" in out.stderr and str(bad) in out.stderr


def test_runs_that_ended_while_the_controller_was_down_end_when_they_were_due(server):
    """A sleep workload that finished and a time limit that ran out during the downtime are recorded at their due
    times (they were recorded at the restart), and each job that was running says what the restart did."""
    with grpc.insecure_channel(server.address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)

        def submit(**spec) -> int:
            body = {"ipus": 4, "user": "u", **spec}
            return jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(body).encode()), timeout=5).job_ids[0]

        slept = submit(name="sleeps", time_limit="1m", workload={"kind": "sleep", "duration": 1.5})
        limited = submit(name="holds", time_limit="2s")  # a hold workload: only its time limit ends it
        kept = submit(name="long", time_limit="1h")
        deadline = time.monotonic() + 10
        while {x.state for x in jobs.ListJobs(j.ListJobsRequest(), timeout=5).jobs} != {"RUNNING"}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    server.kill(signal.SIGKILL)
    time.sleep(2.5)
    server.start()
    with grpc.insecure_channel(server.address) as channel:
        jobs = job_pb2_grpc.JobServiceStub(channel)
        deadline = time.monotonic() + 10
        while jobs.GetJob(j.GetJobRequest(id=limited), timeout=5).state != "TIMEOUT":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        got = {i: jobs.GetJob(j.GetJobRequest(id=i), timeout=5) for i in (slept, limited, kept)}
    assert got[slept].state == "COMPLETED" and got[slept].end_time == got[slept].start_time + 1.5
    assert got[limited].end_time == got[limited].start_time + 2
    assert got[kept].state == "RUNNING"
    notes = {i: json.loads(x.detail_json)["recovery"] for i, x in got.items()}
    assert notes == {i: "resumed after the controller's restart: its partition slurm_%d survived" % i
                     for i in (slept, limited, kept)}


def test_the_cycle_collector_is_paused_for_a_bulk_load_and_back_after_it():
    assert gc.isenabled()
    with cycle_collection_paused():
        assert not gc.isenabled()
        with cycle_collection_paused():  # nested: the outer block turns it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with cycle_collection_paused():
            raise ValueError("a load that fails")
    except ValueError:
        pass
    assert gc.isenabled()
