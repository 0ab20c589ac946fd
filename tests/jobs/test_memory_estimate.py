"""Planner memory figures against hand computations (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from tests.jobs.helpers import ASSUME, RESERVED, SRAM, mlp, pod, transformer
from vipu.jobs import plan
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.blocks import model_stage_layers
from vipu.jobs.memory_estimate import memory, stage_memory

# MLP 8 -> 16 -> 16 -> 4 (3 layers), fp32, in blocks (blocks.py) of a pair (8 -> 16 -> 16) and a single layer (16 -> 4):
#   params = (8*16 + 16) + (16*16 + 16) + (16*4 + 4) = 144 + 272 + 68 = 484
#   weights = gradients = 484 x 4 B = 1,936; Adam m + v = 484 x 8 = 3,872 (fp32: no master copy)
#   activations, b=2: the pair keeps its input, both pre-activations and the first activation (8 + 16 + 16 + 16), the
#   last layer its input and pre-activation (16 + 4): 2 x 76 x 4 B = 608
#   with recomputation: the blocks' inputs 2 x (8 + 16) x 4 = 192, plus the pair's 2 x 56 x 4 = 448 -> 640
# Transformer 2 layers, h=64, 4 heads, s=16, fp16, Adam with fp32 master:
#   per layer (4 + 2x4) h^2 + (9 + 4) h = 12 x 4096 + 13 x 64 = 49,984; params 99,968
#   t=p=r=1: weights = gradients = 99,968 x 2 = 199,936; state 99,968 x (8 + 4) = 1,199,616
#   activations b=1 (Korthikanti without dropout, in values): s h (4 + 12) + 2 s + a s^2 = 16,384 + 32 + 1,024 =
#   17,440 per layer, x 2 layers x 2 B = 69,760
#   t=2 p=2 r=2 RTS, b=2, m=4: stage 0's layer per IPU: attention (4 h^2 + 3 h) / 2 + 3 h (bo and the layer norm
#   replicated) = 8,480, feed-forward (8 h^2 + 4 h) / 2 + 3 h = 16,704: 25,184 params -> weights 50,368 B, state
#   25,184 / 2 x 12 = 151,104; the layer's s h (4 + 12/2) + 2 s + a s^2 / 2 = 10,784 values per sample, x b=2 x
#   min(p, m) = 2 in flight (1F1B) x 2 B = 86,272
CASES = [
    # (name, workload, weights, gradients, optimizer, activations, activations_recompute)
    ("mlp fp32 adam", mlp(micro_batch=2), 1936, 1936, 3872, 608, 640),
    ("mlp fp16 sgd + master", mlp(dtype="fp16", optimizer="sgd", micro_batch=2),
     968, 968, 484 * (4 + 4), 304, 320),  # 2-byte values halve every tensor; momentum 4 B + master 4 B
    ("mlp recompute", mlp(micro_batch=2, recompute=True), 1936, 1936, 3872, 640, 640),
    ("transformer 1 IPU", transformer(), 199936, 199936, 1199616, 69760, None),
    ("transformer t2 p2 r2 rts", transformer(t=2, p=2, r=2, rts=True, micro_batch=2, micro_batches=4),
     50368, 50368, 151104, 86272, None),
    ("offload moves the state out", mlp(micro_batch=2, r=2, offload_optimizer=True), 1936, 1936, 0, 608, 640),
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
    # params 24 x 12,596,224 + (30,400 + 128 + 2) x 1,024 = 333,572,096; p=4: the stages hold 4 layers and the
    # embedding, then 7, 6 and 7 layers; stage 1 needs most: 88.2M params -> weights and gradients 176 MB each,
    # Adam state 705 MB: 1.06 GB + activations + 141 MB reserve > 0.94 GB SRAM
    from tests.jobs.helpers import bert_large

    plain = plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=2048, recompute=True), pod())
    assert plain.params == 333_572_096
    assert plain.memory.sram_stage == 1
    assert plain.memory.optimizer == pytest.approx(7 * 12_596_224 * 8)
    assert not plain.fits
    for option in ({"offload_optimizer": True}, {"rts": True}):
        assert plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=2048, recompute=True, **option), pod()).fits
    assert plan(bert_large(p=8, r=2, micro_batch=8, micro_batches=4096, recompute=True), pod()).fits


def test_recomputation_trades_activations_for_flops():
    # BERT-Large p=4 b=8, stage 0 (4 layers and the embedding): without recomputation 4 layers of s h 16 + 2 s +
    # a s^2 values (Korthikanti without dropout: 37.8 MB at 2 B) and the embedding's 2 s h + s + s vocab (its layer
    # norm, the head's input and logits: 66.5 MB), x 4 in flight = 870 MB; with it 4 x the blocks' inputs (token
    # ids and the head's input, s + s h, and 4 layer inputs, s h) + the largest block, the embedding's
    from tests.jobs.helpers import bert_large

    # matmuls only: the attention scores' vector work grows by another share (forward twice, backward once)
    matmuls = DEFAULT.model_copy(update={"score_forward_cycles": 0, "score_backward_cycles": 0})
    plain = plan(bert_large(p=4, r=4, micro_batch=8, micro_batches=64, rts=True), pod(), matmuls)
    recomputed = bert_large(p=4, r=4, micro_batch=8, micro_batches=64, rts=True, recompute=True)
    s, h, b = 128, 1024, 8
    per_layer = (s * h * 16 + 2 * s + 16 * s * s) * b * 2
    embedding = (2 * s * h + s + s * 30400) * b * 2
    assert plain.memory.sram_stage == 0
    assert plain.memory.activations == pytest.approx(4 * (4 * per_layer + embedding))
    assert stage_memory(recomputed, 0).activations == pytest.approx(4 * (s + 5 * s * h) * b * 2 + embedding)
    recomputed = plan(recomputed, pod(), matmuls)
    # FLOPs x 4/3; the on-chip syncs ending the compute sets (t = 1: a forward and a backward per micro-batch,
    # 0.15 us each) do not grow
    sets = 64 * 2 * 0.15e-6
    assert recomputed.time.compute_s - sets == pytest.approx((plain.time.compute_s - sets) * 4 / 3)


def test_rts_shards_the_weights_phased_execution_keeps_in_streaming_memory():
    # t=2 p=2 r=4 phased transformer (fp16, Adam + master), stage 0: 25,184 params per IPU (see CASES); stored
    # weights and gradient accumulators 2 x 50,368 B, or with RTS a quarter of them, beside the state (a quarter with
    # RTS) and the stash: all 4 micro-batches (batch serialisation) x b=2 x the attention's and the feed-forward's
    # inputs (2 s h) x 2 B, split 2 ways = 16,384 (per replica: unchanged); SRAM still holds a whole block, gathered
    layout = {"t": 2, "p": 2, "r": 4, "micro_batch": 2, "micro_batches": 4, "phased": True}
    whole = memory(transformer(**layout), pod(), ASSUME)
    sharded = memory(transformer(rts=True, **layout), pod(), ASSUME)
    state, stash = 25_184 * 12, 4 * 2 * 2 * 16 * 64 * 2 / 2
    assert (whole.streaming_stage, whole.streaming_stash) == (0, stash)
    assert whole.streaming == pytest.approx(2 * 50_368 + state + stash)
    assert sharded.streaming == pytest.approx(2 * 50_368 / 4 + state / 4 + stash)
    assert (sharded.streaming_weights, sharded.streaming_gradients, sharded.streaming_optimizer) == (
        50_368 / 4, 50_368 / 4, state / 4)
    assert (sharded.weights, sharded.gradients, sharded.total) == (whole.weights, whole.gradients, whole.total)


def test_rts_with_optimiser_offload_shards_the_state_only():
    # offload keeps the weights whole in SRAM, where every micro-batch uses them; the state streams, a quarter each
    layout = {"r": 4, "offload_optimizer": True}
    whole = memory(mlp(**layout), pod(), ASSUME)
    sharded = memory(mlp(rts=True, **layout), pod(), ASSUME)
    assert (sharded.weights, sharded.gradients) == (whole.weights, whole.gradients) == (1936, 1936)
    assert (whole.streaming, sharded.streaming) == (3872, 3872 / 4)
    assert sharded.streaming_optimizer == sharded.streaming  # the only part


def test_the_largest_stage_is_reported_and_the_mean_beside_it():
    # 4 layers of a vocabulary transformer on p=4, phased: the embedding and its tied head ((vocab + s + 2) h =
    # 218 x 64 params, 0.28 of a layer: too little to take a layer off the first stage) join the first stage's
    # layer, whose Streaming Memory is then the largest, the mean of the four below it
    w = transformer(layers=4, vocab=200, p=4, micro_batch=2, micro_batches=8, phased=True)
    stages = [stage_memory(w, s) for s in range(4)]
    layer, embedding = 49_984, 218 * 64
    assert [(st.streaming_weights, st.streaming_optimizer) for st in stages] == [
        (params * 2, params * 12) for params in (layer + embedding, layer, layer, layer)]
    mem = memory(w, pod(), ASSUME)
    assert mem.streaming_stage == 0 and mem.streaming == stages[0].streaming
    assert mem.streaming == pytest.approx(
        mem.streaming_weights + mem.streaming_gradients + mem.streaming_optimizer + mem.streaming_stash)
    assert mem.streaming_mean == pytest.approx(sum(st.streaming for st in stages) / 4)
    assert mem.streaming_mean < mem.streaming
    # batch serialisation: every stage holds all m = 8 micro-batches (b=2) of its blocks' inputs, 2 B a value: the
    # attention's and the feed-forward's (s h each), on the first stage also the token ids (s) and the head's input
    # (s h); 1F1B's p - s in flight would stash a quarter of this on the last stage
    assert [st.streaming_stash for st in stages] == [
        8 * 2 * (2 * 16 * 64 + (16 + 16 * 64 if s == 0 else 0)) * 2 for s in range(4)]


def test_the_embedding_takes_layers_off_the_first_stage():
    # BERT-Large: the embedding weighs 31,262,720 / 12,596,224 = 2.48 layers; over 4 stages each carries
    # (24 + 2.48) / 4 = 6.62 layers' worth: stage boundaries at 6.62 s - 2.48, rounded (Graphcore's own
    # layers_per_ipu: [3, 7, 7, 7])
    from tests.jobs.helpers import bert_large

    model = bert_large(p=4).model
    assert [len(model_stage_layers(model, 4, s)) for s in range(4)] == [4, 7, 6, 7]
    assert [len(model_stage_layers(model, 8, s)) for s in range(8)] == [1, 3, 3, 4, 3, 3, 4, 3]


def test_1f1b_holds_fewer_micro_batches_in_later_stages_gpipe_all():
    w = mlp(layers=4, p=4, micro_batch=2, micro_batches=3)
    assert [w.layout.in_flight_at(s) for s in range(4)] == [3, 3, 2, 1]
    gpipe = mlp(layers=4, p=4, micro_batch=2, micro_batches=3, schedule="gpipe")
    assert [gpipe.layout.in_flight_at(s) for s in range(4)] == [3] * 4
