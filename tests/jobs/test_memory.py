"""Planner memory figures against hand computations (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from tests.jobs.helpers import ASSUME, RESERVED, SRAM, mlp, pod, transformer
from vipu.jobs import plan
from vipu.jobs.memory import memory

# MLP 8 -> 16 -> 16 -> 4 (3 layers), fp32:
#   params = (8*16 + 16) + (16*16 + 16) + (16*4 + 4) = 144 + 272 + 68 = 484
#   weights = gradients = 484 x 4 B = 1,936; Adam m + v = 484 x 8 = 3,872 (fp32: no master copy)
#   activations, b=2: each layer keeps input + pre-activation: 2 x ((8+16) + (16+16) + (16+4)) x 4 B = 608
#   with recomputation: layer inputs 2 x (8 + 16 + 16) x 4 = 320, plus the widest layer 2 x 32 x 4 = 256 -> 576
# Transformer 2 layers, h=64, 4 heads, s=16, fp16, Adam with fp32 master:
#   per layer (4 + 2x4) h^2 + (9 + 4) h = 12 x 4096 + 13 x 64 = 49,984; params 99,968
#   t=p=r=1: weights = gradients = 99,968 x 2 = 199,936; state 99,968 x (8 + 4) = 1,199,616
#   activations b=1 (Korthikanti): s b h 34 + 5 a s^2 b = 16 x 64 x 34 + 5 x 4 x 256 = 34,816 + 5,120 = 39,936
#   per layer, x 2 layers = 79,872
#   t=2 p=2 r=2 RTS, b=2, m=4: per IPU 99,968 / 4 = 24,992 params -> weights 49,984 B, state 24,992 x 12 / 2 =
#   149,952; per layer 16 x 2 x 64 x (10 + 24/2) + 5 x 4 x 256 x 2 / 2 = 45,056 + 5,120 = 50,176, 2 layers / p=2
#   = 50,176 per micro-batch, x min(p, m) = 2 in flight (1F1B) = 100,352
CASES = [
    # (name, workload, weights, gradients, optimizer, activations, activations_recompute)
    ("mlp fp32 adam", mlp(micro_batch=2), 1936, 1936, 3872, 608, 576),
    ("mlp fp16 sgd + master", mlp(dtype="fp16", optimizer="sgd", micro_batch=2),
     968, 968, 484 * (4 + 4), 304, 288),  # 2-byte values halve every tensor; momentum 4 B + master 4 B
    ("mlp recompute", mlp(micro_batch=2, recompute=True), 1936, 1936, 3872, 576, 576),
    ("transformer 1 IPU", transformer(), 199936, 199936, 1199616, 79872, None),
    ("transformer t2 p2 r2 rts", transformer(t=2, p=2, r=2, rts=True, micro_batch=2, micro_batches=4),
     49984, 49984, 149952, 100352, None),
    ("offload moves the state out", mlp(micro_batch=2, r=2, offload_optimizer=True), 1936, 1936, 0, 608, 576),
]


@pytest.mark.parametrize("name, workload, weights, gradients, optimizer, activations, recompute", CASES,
                         ids=[c[0] for c in CASES])
def test_memory_matches_hand_computation(name, workload, weights, gradients, optimizer, activations, recompute):
    mem = memory(workload, pod(), ASSUME)
    assert mem.weights == pytest.approx(weights)
    assert mem.gradients == pytest.approx(gradients)
    assert mem.optimizer == pytest.approx(optimizer)
    assert mem.activations == pytest.approx(activations)
    if recompute is not None:
        assert mem.activations_recompute == pytest.approx(recompute)
    assert mem.reserved == pytest.approx(RESERVED)
    assert mem.total == pytest.approx(weights + gradients + optimizer + activations + RESERVED)
    assert mem.per_tile == pytest.approx(mem.total / 1472)
    assert mem.sram_bytes == SRAM


def test_offloaded_state_is_streaming_memory():
    # 484 params x 8 B of Adam state = 3,872 B per IPU in Streaming Memory; a Bow-2000's 256 GB over 4 IPUs
    mem = memory(mlp(r=2, offload_optimizer=True), pod(), ASSUME)
    assert mem.streaming == pytest.approx(3872)
    assert mem.streaming_capacity == pytest.approx(64e9)


def test_bert_large_p4_r4_needs_rts_or_offload_but_p8_holds_the_state():
    # hardware.md: "BERT-Large mapping, Pod16: p=4, r=4 (p=8 holds all optimiser state in SRAM)".
    # params 24 x 12,596,224 + (30,400 + 128 + 2) x 1,024 = 333,572,096; p=4: 83.4M per IPU -> weights and
    # gradients 166.8 MB each, Adam state 667 MB: 1.0 GB + activations + 141 MB reserve > 0.94 GB SRAM
    from tests.jobs.helpers import bert_large

    plain = plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=2048, recompute=True), pod())
    assert plain.params == 333_572_096
    assert plain.memory.optimizer == pytest.approx(333_572_096 / 4 * 8)
    assert not plain.fits
    for option in ({"offload_optimizer": True}, {"rts": True}):
        assert plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=2048, recompute=True, **option), pod()).fits
    assert plan(bert_large(p=8, r=2, micro_batch=8, micro_batches=4096, recompute=True), pod()).fits


def test_recomputation_trades_activations_for_flops():
    # BERT-Large p=4 b=8: without recomputation 6 layers x 46 MB (Korthikanti: 128 x 8 x 1024 x 34 + 5 x 16 x
    # 128^2 x 8 = 46.1 MB) x 4 in flight = 1.11 GB; with it 4 x 6 x 2.1 MB of layer inputs + one layer 46 MB
    from tests.jobs.helpers import bert_large

    plain = plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=64, rts=True), pod())
    recomputed = plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=64, rts=True, recompute=True), pod())
    per_layer = 128 * 8 * 1024 * 34 + 5 * 16 * 128 * 128 * 8
    assert plain.memory.activations == pytest.approx(4 * 6 * per_layer)
    assert recomputed.memory.activations == pytest.approx(4 * 6 * 128 * 8 * 1024 * 2 + per_layer)
    # FLOPs x 4/3; the on-chip syncs ending the compute sets (t = 1: a forward and a backward per micro-batch,
    # 0.15 us each) do not grow
    sets = 64 * 2 * 0.15e-6
    assert recomputed.time.compute_s - sets == pytest.approx((plain.time.compute_s - sets) * 4 / 3)


def test_rts_shards_the_weights_phased_execution_keeps_in_streaming_memory():
    # t=2 p=2 r=4 phased transformer (fp16, Adam + master): per IPU 99,968 / 4 = 24,992 params; stored weights and
    # gradient accumulators 2 x 49,984 B, or with RTS a quarter of them, beside the state (already a quarter with
    # RTS) and the stash (per replica: unchanged); SRAM still holds a whole phase, gathered
    layout = {"t": 2, "p": 2, "r": 4, "micro_batch": 2, "micro_batches": 4, "phased": True}
    whole = memory(transformer(**layout), pod(), ASSUME)
    sharded = memory(transformer(rts=True, **layout), pod(), ASSUME)
    state = 24_992 * 12
    stash = whole.streaming - 2 * 49_984 - state
    assert stash > 0
    assert sharded.streaming == pytest.approx(2 * 49_984 / 4 + state / 4 + stash)
    assert (sharded.weights, sharded.gradients, sharded.total) == (whole.weights, whole.gradients, whole.total)


def test_rts_with_optimiser_offload_shards_the_state_only():
    # offload keeps the weights whole in SRAM, where every micro-batch uses them; the state streams, a quarter each
    layout = {"r": 4, "offload_optimizer": True}
    whole = memory(mlp(**layout), pod(), ASSUME)
    sharded = memory(mlp(rts=True, **layout), pod(), ASSUME)
    assert (sharded.weights, sharded.gradients) == (whole.weights, whole.gradients) == (1936, 1936)
    assert (whole.streaming, sharded.streaming) == (3872, 3872 / 4)
