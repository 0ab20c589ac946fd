"""The SDK against a DeviceService (served in-process, tests/sdk/in_process.py): attach, tensors and their
capacity refusals, collectives equal to numpy, pipeline sends, virtual time, step reports, instances meeting, and
what is refused to a program that is not its run's."""

from __future__ import annotations

import numpy as np
import pytest

import vipu.sdk as ipu
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.train.work import compute_set_times
from vipu.sdk.device import Device
from vipu.sdk.device_channel import Connection
from tests.jobs.sessions.builders import POD, session
from tests.jobs.sessions.test_rendezvous import in_threads
from tests.sdk.in_process import served

SRAM = POD.ipu.tiles * POD.ipu.sram_per_tile_bytes


def test_attach_learns_the_partition_and_popdists_view():
    with served(session(first=8, size=4)), ipu.attach(ipus_per_replica=2) as device:
        assert (device.partition, device.size, device.first_ipu, device.pod) == ("slurm_7", 4, 8, "bow-pod16")
        assert (device.num_instances, device.num_replicas, list(device.replicas)) == (1, 2, [0, 1])
        assert device.replica_ipus(1) == [2, 3] and device.across_replicas() == [[0, 2], [1, 3]]
        assert device.sram_bytes_per_ipu == SRAM and (device.job_id, device.run) == (7, 1)


def test_attach_and_popdist_agree_by_one_rule():
    """Without a launcher PopDist's functions give PopDist's defaults and the Device is the program's own
    replication, one instance as PopDist says; POPDIST_NUM_IPUS_PER_REPLICA set alone is both's replica size;
    under a launcher the Device takes PopDist's values."""
    popdist = (ipu.isPopdistEnvSet, ipu.getNumInstances, ipu.getInstanceIndex, ipu.getReplicaIndexOffset,
               ipu.getNumTotalReplicas, ipu.getNumIpusPerReplica)
    with served(session(size=4)), ipu.attach(ipus_per_replica=2) as device:
        assert [f() for f in popdist] == [False, 1, 0, 0, 1, 1]
        assert (device.num_instances, device.instance_index, device.replica_offset) == (1, 0, 0)
        assert (device.num_replicas, device.ipus_per_replica) == (2, 2)
    with served(session(size=4), {"POPDIST_NUM_IPUS_PER_REPLICA": "2"}), ipu.attach() as device:
        assert ipu.getNumIpusPerReplica() == device.ipus_per_replica == 2 and device.num_replicas == 2
    launched = {"POPDIST_NUM_TOTAL_REPLICAS": "2", "POPDIST_NUM_IPUS_PER_REPLICA": "2",
                "POPDIST_NUM_LOCAL_REPLICAS": "1", "POPDIST_REPLICA_INDEX_OFFSET": "1"}
    with served(session(size=4), launched), ipu.attach() as device:
        assert [f() for f in popdist] == [True, 2, 1, 1, 2, 2]
        assert (device.num_instances, device.instance_index, device.replica_offset, device.num_replicas,
                device.ipus_per_replica) == (2, 1, 1, 2, 2)
    with served(session(size=4), {**launched, "POPDIST_NUM_TOTAL_REPLICAS": "4", "POPDIST_NUM_LOCAL_REPLICAS": "2",
                                  "POPDIST_REPLICA_INDEX_OFFSET": "0"}):
        with pytest.raises(ipu.InvalidArgument, match="POPDIST_NUM_TOTAL_REPLICAS 4 x POPDIST_NUM_IPUS_PER_REPLICA 2"
                                                       " is not the partition's 4 IPUs"):
            ipu.attach()
        with pytest.raises(ipu.InvalidArgument, match="attach.ipus_per_replica=0.: give 1 or more"):
            ipu.attach(ipus_per_replica=0)


def test_a_launchers_replica_size_wins_and_a_different_one_is_refused():
    launched = {"POPDIST_NUM_TOTAL_REPLICAS": "2", "POPDIST_NUM_IPUS_PER_REPLICA": "2",
                "POPDIST_NUM_LOCAL_REPLICAS": "2", "POPDIST_REPLICA_INDEX_OFFSET": "0"}
    with served(session(), launched):
        with pytest.raises(ipu.InvalidArgument, match="attach.ipus_per_replica=4., but POPDIST_NUM_IPUS_PER_REPLICA"):
            ipu.attach(ipus_per_replica=4)
        with ipu.attach() as device:
            assert device.ipus_per_replica == 2 and device.local_ipus == [0, 1, 2, 3]


def test_more_than_an_ipu_has_free_is_refused_naming_the_ipu_the_bytes_asked_and_free():
    with served(session(first=4)), ipu.attach() as device:
        left = 1472 * 8  # a few bytes a tile: the refused put is small, not a whole IPU's worth sent
        device.reserve("most", {2: SRAM - left})
        device.put("w", {2: np.zeros(1000, np.float32)})
        with pytest.raises(ipu.ResourceExhausted) as refused:
            device.put("big", {2: np.zeros(4000, np.float32)})
        assert "IPU 2 of partition slurm_7 (Pod IPU 6, IPU 2 of machine 1)" in refused.value.message
        assert "needs 16,000 bytes" in refused.value.message and f"({left - 4000:,} free)" in refused.value.message
        with pytest.raises(ipu.InvalidArgument, match="IPU 4 is not one of partition slurm_7's; give 0 to 3"):
            device.put("w", {4: np.zeros(1)})


def test_a_negative_ipu_or_more_than_a_call_carries_is_refused_naming_it_before_anything_is_sent():
    """Regression (walk28): a negative IPU raised protobuf's "ValueError: Value out of range: -1", and a 1 GiB
    put, which docs/sdk.md allows, failed after its bytes were copied with gRPC's "Sent message larger than max"."""
    with served(session()), ipu.attach() as device:
        with pytest.raises(ipu.InvalidArgument, match=r"IPU -1 is negative; give 0 to the partition's size - 1"):
            device.put("w", {-1: np.zeros(4, np.float32)})
        with pytest.raises(ipu.InvalidArgument, match="IPU -2 is negative"):
            device.get("w", [-2])
        with pytest.raises(ipu.InvalidArgument, match="bytes -5 is negative; give 0 to the IPU's SRAM"):
            device.reserve("r", {0: -5})
        with pytest.raises(ipu.InvalidArgument, match=f"bytes {10 ** 20} is too large"):
            device.reserve("r", {0: 10 ** 20})
        with pytest.raises(ipu.InvalidArgument, match="an array of object cannot go to an IPU"):
            device.put("o", {0: np.array([object()])})
        huge = np.broadcast_to(np.zeros(1), ((1 << 27) + 1,))  # 1 GiB and 8 bytes, in 8 bytes of memory
        with pytest.raises(ipu.InvalidArgument, match="1,073,741,832 bytes of arrays in one call; at most"
                                                      " 1,073,741,824 .1 GiB."):
            device.put("huge", {0: huge}, memory="streaming")


def test_collectives_equal_numpy_and_charge_virtual_time():
    rng = np.random.default_rng(3)
    data = {i: rng.standard_normal((3, 8)).astype(np.float32) for i in range(4)}
    with served(session()), ipu.attach(ipus_per_replica=2) as device:
        total = sum(data.values())
        assert all(np.allclose(v, total, rtol=1e-6) for v in device.allreduce(data).values())
        across = device.allreduce(data, device.across_replicas())
        assert np.allclose(across[1], data[1] + data[3], rtol=1e-6)
        shards = device.reduce_scatter(data)
        assert np.allclose(np.concatenate([shards[i] for i in range(4)]), total.reshape(-1), rtol=1e-6)
        gathered = device.all_gather(data, axis=1)
        assert all(np.array_equal(v, np.concatenate([data[i] for i in range(4)], axis=1)) for v in gathered.values())
        sent = device.broadcast({0: None, 1: None, 2: data[2], 3: None}, root=2)
        assert all(np.array_equal(v, data[2]) for v in sent.values())
        report = device.report_step(np.float32(1.5))
    assert report["loss"] == 1.5 and report["collectives"] == 5
    assert report["emulated_step_s"] > 0 and report["bytes_per_link_type"]["ipu_link"] > 0
    assert report["bytes_per_kind"]["tensor_parallel"] == 0  # every collective crossed replicas


def test_a_stage_waits_for_its_input_in_virtual_time():
    with served(session()), ipu.attach(ipus_per_replica=2) as device:
        first, second = device.shard_group([0]), device.shard_group([1])
        first.mm(0, np.ones((64, 64)), np.ones((64, 64)))
        busy = first.close()
        assert busy == compute_set_times(POD, "fp32", {0: 2 * 64 ** 3}, DEFAULT.compute_efficiency).step_s
        sent = first.send(second, [np.arange(6.0)])
        assert np.array_equal(second.recv(first)[0], np.arange(6.0))
        report = device.report_step([0.5, 1.5])
    assert report["loss"] == 1.0 and report["pipeline_send_s"] == sent > 0
    assert report["emulated_step_s"] == pytest.approx(busy + report["sync_s"] + sent)


def test_instances_each_give_their_own_ipus_and_meet():
    with served(session()):
        def instance(index: int):
            from vipu.sdk.device_channel import from_environment

            connection = Connection(from_environment("VIPU_DEVICE_ADDRESS"), from_environment("VIPU_RUN_TOKEN"))
            with Device(connection, 1, 2, index, 4, 2 * index, 2) as device:
                mine = {ipu: np.full(5, ipu + 1.0, np.float32) for ipu in device.local_ipus}
                got = device.allreduce(mine, [0, 1, 2, 3], name="g")
                return got, device.report_step(np.array([index, index], np.float32))

        (a, first), (b, second) = in_threads(lambda: instance(0), lambda: instance(1))
    assert sorted(a) == [0, 1] and sorted(b) == [2, 3]
    assert all(np.array_equal(v, np.full(5, 10.0)) for v in [*a.values(), *b.values()])
    assert first == second and first["loss"] == 0.5 and first["collectives"] == 1


def test_a_program_without_its_runs_token_reaches_nothing(monkeypatch):
    with served(session()):
        monkeypatch.setenv("VIPU_RUN_TOKEN", "not-a-token")
        with pytest.raises(ipu.Unauthenticated, match="no open session has this run token"):
            ipu.attach()
        monkeypatch.delenv("VIPU_DEVICE_ADDRESS")
        with pytest.raises(ipu.FailedPrecondition, match="VIPU_DEVICE_ADDRESS is not set"):
            ipu.attach()
