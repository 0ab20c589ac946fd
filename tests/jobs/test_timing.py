"""Step time: the bubble is exact, compute and collectives follow their formulas on the preset's figures."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.jobs.helpers import ASSUME, bert_large, mlp, pod, transformer
from vipu.jobs import bubble_fraction, plan
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.collective_time import GroupShape, allreduce, allreduce_half
from vipu.jobs.convnet import ConvNetModel
from vipu.jobs.memory_estimate import stash_bytes
from vipu.jobs.timing import WEIGHT_GATHERS

PEAK = 1472 * 128 * 1.85e9  # bow-2000.yaml: tiles x fp16 FLOPs per tile-cycle x clock = 348.6 TFLOPS
SYNC = DEFAULT.sync_per_machine_s  # one sync per machine spanned (assumptions.py)


@pytest.mark.parametrize("p, m, want", [
    (8, 32, Fraction(7, 39)),  # hardware.md: p=8, m=32 -> 18%
    (4, 2048, Fraction(3, 2051)),
    (1, 10, Fraction(0)),
    (4, 1, Fraction(3, 4)),
])
def test_bubble_fraction_is_exact(p, m, want):
    assert bubble_fraction(p, m) == want


def test_bubble_share_of_the_pipeline_time_is_exact():
    # 4 stages on one machine's ring of IPUs (each stage's IPU linked to the next), 32 micro-batches: the pipeline
    # runs m + p - 1 = 35 ticks, 3 of them the bubble; one replica, so every sync is a tick's (2 sends a tick,
    # each after a sync)
    result = plan(transformer(layers=8, p=4, micro_batch=2, micro_batches=32), pod())
    t = result.time
    pipeline = t.compute_s + t.tensor_parallel_s + t.pipeline_send_s + t.sync_s + t.bubble_s
    assert t.sync_s == pytest.approx(32 * 2 * SYNC)  # 2 syncs a tick across the 4 IPUs' one machine
    # balanced stages would wait 3 of 35 ticks; the first and last send one way only, so 2 of those 3 ticks are
    # shorter by one send and its sync
    saved = 2 * (t.tick_s - t.edge_tick_s)
    assert t.tick_s - t.edge_tick_s == pytest.approx(t.pipeline_send_s / 32 / 2 + SYNC)
    assert (t.bubble_s + saved) / (pipeline + saved) == pytest.approx(3 / 35, rel=1e-12)
    assert t.bubble_fraction == pytest.approx(3 / 35)


def test_a_pipeline_send_between_unlinked_ipus_pays_a_latency_per_hop():
    # 8 stages, one IPU each, on 2 machines of a Pod16: IPU 3 links to IPUs 2, 0 and 7, not 4, so the send
    # between stages 3 and 4 goes 3 -> 0 -> 4 (2 hops, as the emulator routes it); every other is 1 hop. A send
    # of b s h = 2 x 16 x 64 fp16 values (4,096 B): 1 us per hop + 4,096 B / 32 GB/s
    t = plan(transformer(layers=8, p=8, micro_batch=2, micro_batches=32), pod()).time
    one_hop, two_hops, sync = 1e-6 + 4096 / 32e9, 2e-6 + 4096 / 32e9, 2 * SYNC  # sync across 2 machines
    assert t.pipeline_send_s == pytest.approx(32 * (one_hop + two_hops))  # stage 3 (or 4): the busiest
    assert t.tick_s - t.edge_tick_s == pytest.approx(two_hops + sync)
    middle = t.tick_s - (two_hops - one_hop)  # stages 1, 2, 5 and 6
    # the busiest stage waits for the micro-batch to cross each other stage once: 2 edges, 4 middles and stage 4
    assert t.bubble_s == pytest.approx(2 * t.edge_tick_s + 4 * middle + t.tick_s)


def test_compute_time_is_flops_over_calibrated_peak():
    # MLP 8 -> 16 -> 16 -> 4 forward FLOPs: 2 x (128 + 256 + 64) = 896 per sample; training 3 x = 2,688;
    # b=2, m=5 on one IPU: 5 x 2 x 2,688 FLOP / (fp32 peak: 1,472 x 32 x 1.85e9 = 87.1 TFLOPS x the matmul
    # efficiency), plus the on-chip sync (0.15 us) ending each micro-batch's forward and backward compute sets, as
    # the emulator charges
    result = plan(mlp(micro_batch=2, micro_batches=5), pod())
    efficiency = DEFAULT.compute_efficiency
    assert result.time.compute_s == pytest.approx(5 * 2 * 2688 / (1472 * 32 * 1.85e9 * efficiency) + 5 * 2 * 0.15e-6)
    assert result.time.sync_s == 0  # one IPU: no collective, no sync


@pytest.mark.parametrize("name, pod_name, group, want_bandwidth, want_latency", [
    # ResNet-50 gradients, 25,557,032 x 2 B = 51,114,064 B; Pod16 mesh: 2 directed rings x 32 GB/s:
    # 2 x 15/16 x n / 64 GB/s; 30 steps x 1 us
    ("pod16 ring", "bow-pod16", GroupShape(16), 2 * 15 / 16 * 51_114_064 / 64e9, 30e-6),
    # whole Pod64 torus: 4 directed rings -> 128 GB/s; 126 steps
    ("pod64 torus", "bow-pod64", GroupShape(64), 2 * 63 / 64 * 51_114_064 / 128e9, 126e-6),
    # Pod256: inside each Pod64 as above, then the n/64 shards across 4 Pod64s over GW-Links at 6.25 GB/s per
    # IPU (2 x 12.5 GB/s shared by 4 IPUs): 2 x 3/4 x (n/64) / 6.25 GB/s; 6 GW steps x 5 us
    ("pod256 hierarchical", "bow-pod256", GroupShape(256),
     2 * 63 / 64 * 51_114_064 / 128e9 + 2 * 3 / 4 * (51_114_064 / 64) / 6.25e9, 126e-6 + 30e-6),
    # 4 replicas 64 IPUs apart (one per Pod64): only the GW phase
    ("pod256 across", "bow-pod256", GroupShape(4, 64), 2 * 3 / 4 * 51_114_064 / 6.25e9, 30e-6),
    ("two IPUs", "bow-pod16", GroupShape(2), 2 * 1 / 2 * 51_114_064 / 32e9, 2e-6),
])
def test_allreduce_alpha_beta(name, pod_name, group, want_bandwidth, want_latency):
    got = allreduce(pod(pod_name), group, 51_114_064)
    assert got.bandwidth_s == pytest.approx(want_bandwidth)
    assert got.latency_s == pytest.approx(want_latency)
    # gamma: 3 bytes of SRAM traffic per reduced byte at 65 TB/s, on (p-1)/p of the data
    assert got.reduce_s == pytest.approx((group.size - 1) / group.size * 51_114_064 * 3 / 65e12)


def test_per_tensor_gradients_pay_latency_per_tensor():
    # ResNet-50 on Pod16: 161 tensors x 30 ring steps x 1 us = 4.83 ms of latency on top of the bandwidth
    # (PopART's default, which bench_planner's PopART runs state)
    res = ConvNetModel().model_dump()
    from vipu.jobs import TrainWorkload

    work = TrainWorkload(model=res, optimizer="sgd", layout={"r": 16, "micro_batch": 18, "micro_batches": 57,
                                                             "gradient_reduction": "per_tensor"})
    got = plan(work, pod(), ASSUME).time.data_parallel_s
    want = allreduce(pod(), GroupShape(16), 51_114_064).total_s + 160 * 30e-6
    assert got == pytest.approx(want)


def test_a_job_is_planned_with_its_gradients_fused_into_one_allreduce():
    # what a job runs (the emulator allreduces each IPU's flat gradient buffer once a step; hardware.md: "one
    # gradient allreduce of S bytes per step"), so plan()'s default, which `vipu plan` and submit use, is fused:
    # tiny_dp's 8 gradient tensors (44,328 B per replica, 4 IPUs of one machine) pay one ring's 6 hops of latency,
    # not 8 x 6, and one sync, not 8
    work = mlp(layers=4, hidden=64, inputs=32, outputs=10, optimizer="sgd", r=4, micro_batch=8, micro_batches=2)
    t = plan(work, pod()).time
    assert t.data_parallel_s == pytest.approx(allreduce(pod(), GroupShape(4), 11_082 * 4).total_s)
    assert t.sync_s == pytest.approx(SYNC)
    per_tensor = work.model_copy(update={"layout": work.layout.model_copy(update={"gradient_reduction": "per_tensor"})})
    assert plan(per_tensor, pod()).time.data_parallel_s == pytest.approx(
        allreduce(pod(), GroupShape(4), 11_082 * 4, 8).total_s)


def test_tensor_parallel_collectives_follow_megatron():
    # tiny transformer, t=4 (one machine's ring of 4: 2 directed rings), b=4: each allreduce carries s b h x 2 B
    # = 16 x 4 x 64 x 2 = 8,192 B; 2 layers x (2 forward + 2 backward) = 8 allreduces per micro-batch
    result = plan(transformer(t=4, micro_batch=4, micro_batches=3), pod())
    one = 2 * 3 / 4 * 8192 / 64e9 + 6e-6 + 3 / 4 * 8192 * 3 / 65e12
    assert result.time.tensor_parallel_s == pytest.approx(3 * 8 * one)


def test_offloaded_optimizer_streams_its_state_each_step():
    # BERT-Large p=4, r=4, RTS: 333,572,096 / 4 params x 8 B / 4 replicas = 166.8 MB per IPU, read and written
    # in parallel at 16 GB/s shared by 4 IPUs = 4 GB/s each, after one Streaming Memory latency (2 us) per step
    result = plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=16, recompute=True, rts=True,
                             offload_optimizer=True), pod())
    assert result.time.streaming_s == pytest.approx(2e-6 + 333_572_096 / 4 * 8 / 4 / 4e9)


@pytest.mark.parametrize("pod_name, group", [
    ("bow-pod16", GroupShape(4)),  # a machine's ring
    ("bow-pod16", GroupShape(4, 2)),  # strided inside one machine: the emulator's schedule
    ("bow-pod64", GroupShape(4, 16)),  # columns of the torus
    ("bow-pod256", GroupShape(4, 64)),  # one IPU per Pod64: GW-Links (GPT-3's replicas)
    ("bow-pod128", GroupShape(8, 16)),  # columns of two tori, then GW-Links
], ids=["ring", "stride2", "stride16", "across-pod64s", "strided-across-pod64s"])
def test_rts_halves_add_up_to_the_allreduce(pod_name, group):
    whole = allreduce(pod(pod_name), group, 1 << 20, 2)
    scatter = allreduce_half(pod(pod_name), group, 1 << 20, "reduce_scatter", 2)
    gather = allreduce_half(pod(pod_name), group, 1 << 20, "all_gather", 2)
    assert scatter.total_s + gather.total_s == pytest.approx(whole.total_s, rel=1e-9)
    assert gather.total_s == pytest.approx((whole.total_s - whole.reduce_s) / 2, rel=0.01)  # gamma: scatter only


POD_OF = {64: "bow-pod64", 128: "bow-pod128", 256: "bow-pod256"}


@settings(max_examples=30, deadline=None)
@given(stride=st.sampled_from([1, 2, 4, 8, 16, 32]), nbytes=st.sampled_from([1 << 12, 1 << 20, 50_000_000]),
       collectives=st.sampled_from([1, 50]), op=st.sampled_from(["allreduce", "reduce_scatter", "all_gather"]))
def test_more_replicas_across_pod64s_never_reduce_faster(stride, nbytes, collectives, op):
    """Regression (walk33): strided replica groups spanning two Pod64s were priced as if each had its Pod64's rings
    to itself: r = 8 replicas of a t1 p16 transformer allreduced in 10.4 ms on a Pod128, r = 4 in 15.4 ms on a
    Pod64. The same bytes a replica over more replicas, past the IPU-Link domain: never faster."""
    def seconds(r: int) -> float:
        group, name = GroupShape(r, stride), POD_OF[r * stride]
        if op == "allreduce":
            return allreduce(pod(name), group, nbytes, collectives).total_s
        return allreduce_half(pod(name), group, nbytes, op, collectives).total_s

    one_pod64 = 64 // stride  # the most replicas inside one IPU-Link domain
    times = [seconds(one_pod64 * k) for k in (1, 2, 4)]
    assert times == sorted(times) and times[0] < times[1]


def test_a_pipeline_s_replicas_on_two_pod64s_take_longer_than_on_one():
    gpt = dict(layers=24, hidden=2048, heads=16, seq_len=1024, vocab=50304, p=16, micro_batch=1, micro_batches=64,
               recompute=True, offload_optimizer=True)
    dp = [plan(transformer(**gpt, r=r), pod(POD_OF[16 * r])).time.data_parallel_s for r in (4, 8, 16)]
    assert dp == sorted(dp)


def test_phased_rts_streams_shards_and_gathers_the_weights_before_each_use():
    # t=1 p=2 r=4 MLP 12 -> 256 x 4 -> 5 fp32, Adam: per IPU n = params / 2, weights and gradients stored as n/4
    # x 4 B; read 4 x weights + gradients + state + stash, written gradients + weights + state + stash, at a
    # machine's 16 GB/s shared by 4 IPUs after 2 us; the gradients reduce-scattered, the weights all-gathered
    # before forward, recomputation and backward, each collective after a partition sync
    layout = {"p": 2, "r": 4, "micro_batch": 16, "micro_batches": 4, "phased": True}
    model = {"layers": 4, "hidden": 256, "inputs": 12, "outputs": 5}
    whole, sharded = (plan(mlp(**model, **layout, rts=rts), pod(), DEFAULT) for rts in (False, True))  # fused
    n = whole.params / 2
    state, stash = n * 8 / 4, stash_bytes(mlp(**model, **layout))
    reads = 5 * n * 4 / 4 + state + stash
    assert sharded.time.streaming_s == pytest.approx(2e-6 + 4 * reads / 16e9)
    assert sharded.time.streaming_s < whole.time.streaming_s
    replicas = GroupShape(4, 2)
    assert sharded.time.data_parallel_s == pytest.approx(
        allreduce_half(pod(), replicas, n * 4, "reduce_scatter").total_s
        + WEIGHT_GATHERS * allreduce_half(pod(), replicas, n * 4, "all_gather").total_s)
    assert sharded.time.sync_s - whole.time.sync_s == pytest.approx(WEIGHT_GATHERS * DEFAULT.sync_s(pod(), 8))


@settings(max_examples=40, deadline=None)
@given(p=st.sampled_from([1, 2, 4, 8]), m=st.integers(1, 64), b=st.integers(1, 8), r=st.sampled_from([1, 2]))
def test_parts_add_up_and_throughput_is_batch_over_step(p, m, b, r):
    result = plan(mlp(layers=8, p=p, r=r, micro_batch=b, micro_batches=m), pod(), ASSUME)
    t = result.time
    assert result.step_s == pytest.approx(sum(s for _, s in t.parts()))
    assert result.throughput == pytest.approx(b * m * r / result.step_s)
    # the busiest stage waits for the micro-batch to cross every other stage once; the first and last are lighter,
    # and inside one machine's ring (p <= 4) the others tick as the busiest does
    if p <= 4:
        assert t.bubble_s == pytest.approx((p - 1) * t.tick_s if p <= 2 else 2 * t.edge_tick_s + (p - 3) * t.tick_s)
    assert (p - 1) * t.edge_tick_s <= t.bubble_s * (1 + 1e-12) and t.bubble_s <= (p - 1) * t.tick_s * (1 + 1e-12)
    assert t.edge_tick_s <= t.tick_s
    assert result.memory.total == pytest.approx(
        result.memory.weights + result.memory.gradients + result.memory.optimizer + result.memory.activations
        + result.memory.reserved)


@pytest.mark.parametrize("buffer,collectives", [(52_428_800, 1), (16 * 2**20, 4), (51_114_064, 1), (51_114_063, 2)])
def test_buffered_gradients_pay_latency_per_buffer(buffer, collectives):
    # ResNet-50 fp16 gradients are 25,557,032 x 2 = 51,114,064 bytes: TensorFlow's 50 MiB cross-replica-sum buffer
    # (Graphcore's ResNet-50 configs) holds them in one allreduce; a 16 MiB buffer needs ceil(48.7 / 16) = 4
    from vipu.jobs import TrainWorkload

    work = TrainWorkload(model=ConvNetModel().model_dump(), optimizer="sgd",
                         layout={"r": 16, "micro_batch": 20, "micro_batches": 6, "gradient_reduction": "buffered",
                                 "gradient_buffer_bytes": buffer})
    got = plan(work, pod()).time.data_parallel_s
    want = allreduce(pod(), GroupShape(16), 51_114_064).total_s + (collectives - 1) * 30e-6
    assert got == pytest.approx(want)
    assert work.layout.gradient_collectives(161, 51_114_064) == collectives


@pytest.mark.parametrize("pod_name, ipus, sync", [
    ("bow-pod16", 1, 0.5e-6),  # one machine
    ("bow-pod16", 16, 4 * 0.5e-6),
    ("bow-pod64", 64, 16 * 0.5e-6),
    ("bow-pod256", 128, 16 * 0.5e-6 + 5e-6),  # across two Pod64s: one level of gateways
    ("bow-pod256", 256, 16 * 0.5e-6 + 2 * 5e-6),  # four Pod64s: a tree of two levels; machines stop at a Pod64's 16
])
def test_a_sync_costs_per_machine_spanned_and_more_across_pod64s(pod_name, ipus, sync):
    assert ASSUME.sync_s(pod(pod_name), ipus) == pytest.approx(sync)


def test_distributed_batch_norm_allreduces_statistics_and_syncs_per_pass():
    # ResNet-50, pairs of replicas pooling batch-norm statistics, recomputing: 3 passes x 53 batch norms per
    # micro-batch, each an allreduce of a mean and a variance per channel (26,560 channels x 2 x 4 B in all) over
    # 2 adjacent IPUs, each after a sync of those 2 IPUs (one machine); per tensor, 161 gradient syncs across the
    # Pod64 (16 machines)
    from vipu.jobs import TrainWorkload

    work = TrainWorkload(model={"kind": "resnet50", "batch_norm_replicas": 2}, optimizer="sgd",
                         layout={"r": 64, "micro_batch": 20, "micro_batches": 2, "recompute": True,
                                 "gradient_reduction": "per_tensor"})
    t = plan(work, pod("bow-pod64"), ASSUME).time
    stats = allreduce(pod("bow-pod64"), GroupShape(2), 3 * 26_560 * 2 * 4, 3 * 53)
    assert t.batch_norm_s == pytest.approx(2 * stats.total_s)
    one_sync = 16 * SYNC
    assert t.sync_s == pytest.approx(2 * 3 * 53 * SYNC + 161 * one_sync)
    local = plan(work.model_copy(update={"model": ConvNetModel()}), pod("bow-pod64"), ASSUME).time
    assert local.batch_norm_s == 0 and local.sync_s == pytest.approx(161 * one_sync)
