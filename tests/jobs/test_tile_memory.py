"""Memory as a compiler sees it: the fullest tile decides, not the IPU's bytes split evenly over its tiles."""

from __future__ import annotations

import pytest

from vipu.errors import InvalidArgument
from vipu.hardware.pod_files import load_pod
from vipu.jobs.assumptions import DEFAULT
from vipu.jobs.memory_estimate import tile_report
from vipu.jobs.planner import plan
from vipu.jobs.suggest import check_fits
from vipu.jobs.tile_memory import TileMemory, TileTensor, per_tile, report
from vipu.jobs.train_spec import TrainWorkload

POD = load_pod("bow-pod16")
TILE = 638_976  # 624 KiB


def bert_ish(**layout) -> TrainWorkload:
    return TrainWorkload(model=dict(kind="transformer", layers=2, hidden=1024, heads=16, seq_len=512, dtype="fp16"),
                         layout={"micro_batch": 6, "micro_batches": 4, **layout}, optimizer="adam")


def test_an_even_split_that_fits_is_refused_by_the_fullest_tile():
    result = plan(bert_ish(), POD)
    mem = result.memory
    assert mem.fits_evenly and mem.total / mem.sram_bytes == pytest.approx(0.90, abs=0.01)
    assert not mem.tiles.fits and mem.tiles.peak / TILE == pytest.approx(1.06, abs=0.01)
    assert not result.fits
    (problem,) = result.problems()
    assert problem.startswith("the fullest tile needs") and "available_memory_proportion" in problem
    with pytest.raises(InvalidArgument, match="the fullest tile needs"):
        check_fits(bert_ish(), POD, ipus=1)


def test_a_lower_available_memory_proportion_caps_the_temporaries_and_fits():
    mem = plan(bert_ish(available_memory_proportion=0.1), POD).memory
    assert mem.tiles.temporaries == pytest.approx(0.1 * TILE)
    assert mem.tiles.fits and mem.fits_sram


def test_io_tiles_take_sram_and_compute_from_the_model():
    plain, io = plan(bert_ish(micro_batch=1), POD), plan(bert_ish(micro_batch=1, io_tiles=128), POD)
    assert io.memory.sram_bytes == (1472 - 128) * TILE and io.memory.tiles.compute_tiles == 1344
    assert io.memory.tiles.peak > plain.memory.tiles.peak
    assert io.time.compute_s == pytest.approx(plain.time.compute_s * 1472 / 1344, rel=1e-3)


def test_a_tensor_that_does_not_divide_puts_its_remainder_on_the_first_tiles():
    tiles = 4
    memory = TileMemory(compute_tiles=tiles, tile_bytes=1000, reserve=10, temporaries=0, always_live=0,
                        not_always_live=0, peak=0)
    odd = TileTensor("w", 5 * 64, 64, True)  # 5 grains over 4 tiles: tile 0 holds 2
    small = TileTensor("b", 64, 64, True)  # one grain: tile 0 only
    assert [odd.on_tile(t, tiles) for t in range(tiles)] == [128, 64, 64, 64]
    assert per_tile([odd, small], memory) == [10 + 128 + 64, 10 + 64, 10 + 64, 10 + 64]
    lines = report([odd, small], memory)
    assert lines[-3].startswith("  tile     0:") and "w 0.1" in lines[-3]


def test_io_tiles_must_leave_tiles_to_compute_on():
    from vipu.jobs.layout import check_partition

    with pytest.raises(InvalidArgument, match=r"workload.layout.io_tiles is 1472 .* give at most 1471"):
        check_partition(bert_ish(io_tiles=1472).layout, 1, POD)


def test_a_2d_layout_that_does_not_fit_is_suggested_2d_layouts_of_its_ipus():
    from vipu.jobs.suggest import suggest

    gpt = dict(kind="transformer", layers=8, hidden=2048, heads=16, seq_len=1024, dtype="fp16")
    w = TrainWorkload(model=gpt, layout=dict(t=2, t2=2, r=4, micro_batch=1, micro_batches=8), optimizer="adam")
    assert not plan(w, POD).fits
    found = suggest(w, POD)
    assert found and all(c.layout.t2 == 2 and c.layout.ipus == 16 and c.fits for c in found)


def pipelined(layers_per_stage=None) -> TrainWorkload:
    # 24 layers on 4 stages, optimiser state in Streaming Memory: 6 layers an IPU fit, 15 do not
    return TrainWorkload(model=dict(kind="transformer", layers=24, hidden=1024, heads=16, seq_len=128, dtype="fp16"),
                         layout={"p": 4, "micro_batch": 8, "micro_batches": 16, "recompute": True,
                                 "offload_optimizer": True, "layers_per_stage": layers_per_stage}, optimizer="adam")


def test_the_fullest_stage_of_an_uneven_layout_decides_the_fit():
    even, uneven = plan(pipelined(), POD), plan(pipelined([3, 3, 3, 15]), POD)
    assert even.fits and even.memory.tiles.peak / TILE == pytest.approx(0.60, abs=0.01)
    assert uneven.memory.sram_stage == 3 and not uneven.memory.fits_evenly and not uneven.fits
    # weights and gradients of 15 layers where the even split has 6
    assert uneven.memory.weights == pytest.approx(even.memory.weights * 15 / 6)
    (problem,) = uneven.problems()
    # stages are counted from 1 where a person reads them (the JSON's sram_stage stays an index from 0)
    assert "pipeline stage 4 of 4" in problem
    # the refusal lists layouts that fit; those at another p split the layers evenly (they kept the spec's four
    # counts, and failed to plan)
    with pytest.raises(InvalidArgument, match="pipeline stage 4 of 4"):
        check_fits(pipelined([3, 3, 3, 15]), POD, ipus=4)
    # the report is of the fullest stage's IPU, and says which layers it holds
    heading = tile_report(pipelined([3, 3, 3, 15]), POD, DEFAULT)[0]
    assert heading == "pipeline stage 4 of 4, the one needing most SRAM: layers 10-24 of 24 (layers_per_stage)"
    assert "memory per IPU (SRAM), pipeline stage 4 of 4 (the one needing most)" in uneven.table()


def test_stages_are_counted_from_one_where_read():
    # BERT-Large's [3, 7, 7, 7]: its second stage needs most (the first holds 3 layers and the embedding)
    second = pipelined([3, 7, 7, 7])
    assert plan(second, POD).memory.sram_stage == 1
    heading = tile_report(second, POD, DEFAULT)[0]
    # its layers counted from 1 too (walk40: "stage 2 of 4: layers 3-9" counted them from 0): layers_per_stage's
    # second entry, 7, is layers 4 to 10
    assert heading.startswith("pipeline stage 2 of 4, the one needing most SRAM: layers 4-10 of 24")
    # two stages: the first (under 1F1B it holds the most micro-batches) is "1 of 2", never "0 of 2"
    two = second.model_copy(update={"layout": second.layout.model_copy(update={"p": 2, "layers_per_stage": None})})
    report = "\n".join(tile_report(two, POD, DEFAULT)) + plan(two, POD).table()
    assert "stage 0 of" not in report and "pipeline stage 1 of 2" in report


def test_the_even_split_is_said_to_leave_out_the_matmul_temporaries():
    """Regression (walk33): "evenly split it would be 592 KiB" beside a fullest tile of 673 KiB read as an imbalance;
    the 81 KiB between are the matmul temporaries every tile holds, which the even split leaves out."""
    gpt = TrainWorkload(model=dict(kind="transformer", layers=24, hidden=2048, heads=16, seq_len=1024, vocab=50304,
                                   dtype="fp16"),
                        layout=dict(p=16, r=4, micro_batch=1, micro_batches=64, recompute=True, rts=True,
                                    offload_optimizer=True, io_tiles=256), optimizer="adam")
    result = plan(gpt, load_pod("bow-pod64"))
    tiles = result.memory.tiles
    assert result.memory.fits_evenly and not tiles.fits
    assert round(tiles.peak / 1024) == round(result.memory.per_tile / 1024) + round(tiles.temporaries / 1024) == 673
    (problem,) = result.problems()
    assert "it would be" not in problem
    assert "; evenly split, without matmul temporaries: 592 KiB a tile; the temporaries add 81 KiB to every tile);" \
           in problem
    assert "  per tile, evenly split        592 KiB   of 624 KiB (without matmul temporaries; 1,216 compute tiles," \
           " 256 I/O tiles)" in result.table()
