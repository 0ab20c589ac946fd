"""A program's session without gRPC: tensors on the machines with their capacity, collectives equal to numpy on
the data, virtual time from the engine's cost model, instances meeting for collectives and step reports, sends that
make the receivers wait, and an end that releases its waiters and frees everything."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vipu.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, Unauthenticated
from vipu.jobs.sessions.tokens import Sessions
from vipu.jobs.train.work import compute_set_times
from tests.jobs.sessions.builders import POD, machines_for, session
from tests.jobs.sessions.test_rendezvous import in_threads

SRAM = POD.ipu.tiles * POD.ipu.sram_per_tile_bytes


def test_tensors_round_trip_and_refusals_name_the_ipu_the_bytes_asked_and_free():
    s = session(first=4)
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    s.put("w", {1: w})
    assert np.array_equal(s.get("w", [1])[1], w)
    with pytest.raises(ResourceExhausted) as sram:
        s.put("big", {1: np.zeros(SRAM // 4, np.float32)})
    message = sram.value.message
    assert "IPU 1 of partition slurm_7 (Pod IPU 5, IPU 1 of machine 1)" in message and "'big'" in message
    assert f"needs {SRAM:,} bytes" in message and f"({SRAM - 48:,} free)" in message and "job7" not in message
    streaming = int(POD.machine.streaming_memory_bytes)
    with pytest.raises(ResourceExhausted) as dram:
        s.put("huge", {2: np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(streaming + 1,),
                                                          strides=(0,))}, memory="streaming")
    assert "out of Streaming Memory on machine 1" in dram.value.message and "IPU 2 of partition" in dram.value.message
    assert f"needs {streaming + 1:,} bytes but {streaming:,} of {streaming:,} are free" in dram.value.message


def test_streaming_memory_moves_are_charged_and_a_put_there_loads_onto_the_ipu():
    s = session()
    s.put("state", {0: np.ones(1 << 20, np.uint8)}, memory="streaming")
    seconds = s.load("state", [0])
    spec = POD.machine
    assert seconds == pytest.approx(spec.streaming_memory_latency_s + (1 << 20) / spec.streaming_memory_bytes_per_s)
    assert s.get("state", [0])[0].sum() == 1 << 20
    assert s.offload("state", [0]) == seconds
    assert s.report_step(0, 0, np.zeros(1)).streaming_s == pytest.approx(2 * seconds)


@pytest.mark.parametrize("groups", [None, [[0, 2], [1, 3]]], ids=["block", "strided"])
def test_collectives_give_numpys_results_on_the_data(groups):
    s = session()
    rng = np.random.default_rng(1)
    data = {ipu: rng.standard_normal((6, 5)).astype(np.float32) for ipu in range(4)}
    by_group = groups or [[0, 1, 2, 3]]
    summed, seconds = s.collective("allreduce", "g", groups, data, 0)
    assert seconds > 0
    for g in by_group:
        for ipu in g:
            np.testing.assert_allclose(summed[ipu], sum(data[i] for i in g), rtol=1e-6)
    shards, _ = s.collective("reduce_scatter", "g", groups, data, 0)
    for g in by_group:
        whole = sum(data[i] for i in g).reshape(-1)
        np.testing.assert_allclose(np.concatenate([shards[i] for i in g]), whole, rtol=1e-6)
    gathered, _ = s.collective("all_gather", "p", groups, {ipu: np.full(3, ipu, np.int32) for ipu in range(4)}, 0)
    for g in by_group:
        assert all(gathered[i].tolist() == [j for j in g for _ in range(3)] for i in g)
    root = by_group[0][-1]
    sent, _ = s.collective("broadcast", "b", [by_group[0]], {i: data[root] if i == root else None for i in by_group[0]},
                        0, root=root)
    assert all(np.array_equal(sent[i], data[root]) for i in by_group[0])


def test_time_is_charged_with_the_engines_cost_model_and_parts_by_replica():
    s = session()
    s.attach(0, 1, 2)  # replicas of IPUs 0-1 and 2-3
    cs = s.compute({0: 4e6, 1: 2e6}, "fp32")
    assert cs == compute_set_times(POD, "fp32", {0: 4e6, 1: 2e6}, s.efficiency).step_s
    x = {0: np.ones(1000, np.float32), 1: np.ones(1000, np.float32)}
    s.collective("allreduce", "tp", None, x, 0)  # inside replica 0: tensor parallel
    s.collective("allreduce", "dp", [[0, 2], [1, 3]], {i: np.ones(10, np.float32) for i in range(4)}, 0)
    report = s.report_step(0, 0, np.array([1.0, 3.0], np.float32))
    assert report.loss == 2.0 and report.compute_s == cs
    assert report.tensor_parallel_s > 0 and report.data_parallel_s > 0
    assert report.sync_s == pytest.approx(2 * s.sync_s)
    assert report.emulated_step_s == pytest.approx(cs + report.sync_s + report.tensor_parallel_s
                                                   + report.data_parallel_s, rel=1e-12)
    assert report.bytes_per_kind["tensor_parallel"] > 0 and report.bytes_per_kind["data_parallel"] > 0
    assert report.ipus[0].utilisation > report.ipus[1].utilisation > 0 == report.ipus[2].utilisation
    assert report.ipus[0].memory_bytes == 4000 + 40 and s.report_step(0, 1, np.zeros(1)).emulated_step_s == 0


def test_vector_cycles_are_charged_over_the_tiles_and_must_name_ipus_of_the_set():
    # attention's softmax (kernels.score_cycles): tile cycles spread over the IPU's tiles, after its FLOPs
    s = session()
    tiles, clock = POD.ipu.tiles, POD.ipu.clock_hz
    plain = s.compute({0: 0.0}, "fp16")
    assert s.compute({0: 0.0}, "fp16", {0: 1000.0 * tiles}) == pytest.approx(plain + 1000 / clock)
    with pytest.raises(InvalidArgument, match=r"vector_cycles name IPUs \[1\]"):
        s.compute({0: 1e6}, "fp16", {1: 10.0})
    with pytest.raises(InvalidArgument, match="finite and 0 or more"):
        s.compute({0: 1e6}, "fp16", {0: -1.0})


def test_a_receive_waits_for_its_send_and_the_wait_is_the_bubble():
    s = session()
    long = s.compute({0: 1e9}, "fp32")
    short = s.compute({1: 1e6}, "fp32")
    sent = s.send("act", {0: np.arange(8.0)}, [1], 0)
    assert np.array_equal(s.recv("act", [0], [1], 0)[1], np.arange(8.0))
    assert s.clocks.now[1] == pytest.approx(long + s.sync_s + sent)
    report = s.report_step(0, 0, np.zeros(1))
    assert report.pipeline_send_s == sent and report.bubble_s == 0  # IPU 0 is the busy one
    assert report.bubble_fraction == pytest.approx(((long + s.sync_s + sent) - short) / report.emulated_step_s / 4
                                                   + 2 / 4)


def test_instances_meet_for_collectives_and_reports_which_run_once():
    s = session()
    s.attach(0, 2, 1)
    s.attach(1, 2, 1)

    def instance(mine: list[int], losses: list[float]):
        got, _ = s.collective("allreduce", "g", [[0, 1, 2, 3]], {i: np.full(4, i + 1.0) for i in mine}, 0)
        return got, s.report_step(mine[0] // 2, 0, np.array(losses))

    (a, ra), (b, rb) = in_threads(lambda: instance([0, 1], [1.0, 2.0]), lambda: instance([2, 3], [3.0, 6.0]))
    assert all(np.array_equal(v, np.full(4, 10.0)) for v in [*a.values(), *b.values()])
    assert ra is rb and ra.loss == 3.0 and ra.collectives == 1 and len(s.reports) == 1


def test_the_end_releases_waiting_calls_and_frees_every_tensor():
    machines = machines_for(0, 4)
    sessions = Sessions()
    s = session(machines=machines)
    token = sessions.open(s)
    assert sessions.get(token) is s
    s.put("w", {0: np.ones(100, np.float32)})
    s.reserve("act", {1: 4096})
    waiting = threading.Thread(target=lambda: pytest.raises(FailedPrecondition, s.recv, "x", [0], [1], 0))
    waiting.start()
    threading.Event().wait(0.1)
    sessions.close(token, "job 7 was cancelled")
    waiting.join(timeout=5)
    assert not waiting.is_alive() and s.freed.wait(5)
    assert all(ipu["sram_allocated_bytes"] == 0 for ipu in machines[0][0].stats()["per_ipu"].values())
    with pytest.raises(Unauthenticated, match="no open session has this run token"):
        sessions.get(token)
    with pytest.raises(FailedPrecondition, match="cancelled"):
        s.put("w", {0: np.ones(1)})
