"""Tile SRAM: placement by tile mapping, out-of-memory per tile and per IPU with exact bytes, and data access."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workers.conftest import TILE, small_ipu
from vipu.errors import InvalidArgument, NotFound, ResourceExhausted
from vipu.workers.tile_sram import IpuMemory, Linear, TileSlice, explicit, place

LABEL = "IPU 21 (IPU 1 of machine 5)"


def bow_ipu() -> IpuMemory:
    return IpuMemory(1472, TILE, LABEL)


def test_linear_mapping_spreads_whole_elements_evenly():
    # 10 elements over 4 tiles: 10 = 4 x 2 + 2, so the first two tiles get 3
    assert place(Linear(8, 4), 10, 4, 1472, "t") == (
        TileSlice(8, 0, 3), TileSlice(9, 3, 6), TileSlice(10, 6, 8), TileSlice(11, 8, 10))


def test_linear_mapping_of_fewer_elements_than_tiles_leaves_the_rest_empty():
    memory = bow_ipu()
    memory.allocate("x", np.zeros(3, np.float16))
    assert list(memory.used[:4]) == [2, 2, 2, 0]


def test_out_of_memory_on_one_tile_names_tensor_tile_and_bytes_over():
    memory = bow_ipu()
    memory.allocate("a", np.zeros(238_976 // 4, np.float32), explicit([(17, 238_976)]))  # leaves 400,000 free
    with pytest.raises(ResourceExhausted) as err:
        memory.allocate("w1", np.zeros(700_000 // 4, np.float32), explicit([(17, 700_000)]))
    assert err.value.message == (
        f"out of memory on {LABEL}: tensor 'w1' needs 700,000 bytes on tile 17, which has 638,976 bytes"
        " (400,000 free): 300,000 bytes over; map it over more tiles or offload it to Streaming Memory")
    assert "w1" not in memory.tensors and memory.used_bytes == 238_976


def test_linear_mapping_over_too_few_tiles_overflows_each_of_them():
    # 10 tiles x 700,000 bytes: each tile is 700,000 - 638,976 = 61,024 bytes over
    with pytest.raises(ResourceExhausted, match=r"needs 700,000 bytes on tile 0, which has 638,976 bytes "
                                                r"\(638,976 free\): 61,024 bytes over \(and 9 more tiles\)"):
        bow_ipu().allocate("w", np.zeros(7_000_000, np.uint8), Linear(0, 10))


def test_out_of_memory_on_the_whole_ipu_says_so():
    memory = small_ipu()  # 4 tiles x 1,000 bytes
    memory.allocate("a", np.zeros(100, np.uint8))
    with pytest.raises(ResourceExhausted) as err:
        memory.allocate("big", np.zeros(490, np.float64))  # 3,920 bytes > 3,900 free
    assert err.value.message == (
        "out of memory on IPU 0: tensor 'big' needs 3,920 bytes but the IPU has 4,000 bytes of tile memory"
        " (3,900 free): 20 bytes over; shard it over more IPUs, free other tensors or offload it to Streaming Memory")


def test_replacing_a_tensor_counts_its_old_bytes_as_free_and_keeps_it_if_the_new_one_fails():
    memory = small_ipu()
    memory.allocate("t", np.ones(3000, np.uint8))
    memory.allocate("t", np.full(3900, 2, np.uint8))  # fits only because the old 3,000 bytes go
    assert memory.used_bytes == 3900
    with pytest.raises(ResourceExhausted):
        memory.allocate("t", np.zeros(4001, np.uint8))
    assert memory.used_bytes == 3900 and memory.read("t")[0] == 2


def test_allocate_copies_so_callers_and_read_only_arrays_do_not_alias():
    source = np.arange(4, dtype=np.float32)
    source.flags.writeable = False  # what Ray hands an actor
    memory = small_ipu()
    memory.allocate("t", source)
    memory.add_slice("t", 0, 4, np.ones(4))
    assert list(source) == [0, 1, 2, 3] and list(memory.read("t")) == [1, 2, 3, 4]


def test_a_handed_array_is_held_without_a_copy_and_the_callers_later_writes_are_refused():
    memory = small_ipu()
    given = np.arange(4, dtype=np.float32)
    memory.allocate("t", given, copy=False)
    assert np.shares_memory(memory.tensor("t").data, given)
    with pytest.raises(ValueError, match="read-only"):
        given[0] = 9
    memory.add_slice("t", 0, 4, np.ones(4))  # the IPU's own write: in place, on the memory it was handed
    assert memory.read("t").tolist() == [1, 2, 3, 4]


def test_a_handed_array_over_capacity_is_refused_and_stays_the_callers():
    memory = small_ipu()
    memory.allocate("t", np.ones(100, np.uint8))
    given = np.zeros(4001, np.uint8)
    with pytest.raises(ResourceExhausted, match=f"out of memory on IPU 0: tensor 't' needs 4,001 bytes"):
        memory.allocate("t", given, copy=False)
    given[0] = 1  # still writable: the IPU did not take it
    assert memory.used_bytes == 100 and memory.read("t")[0] == 1


def test_a_view_lent_keeps_its_values_and_the_ipus_next_writes_go_to_a_copy():
    memory = small_ipu()
    memory.allocate("t", np.zeros(4, np.float32))
    lent = memory.view("t")
    with pytest.raises(ValueError):
        lent.flags.writeable = True
    memory.add_slice("t", 0, 4, np.ones(4))
    memory.allocate("t", np.full(4, 7, np.float32))
    assert lent.tolist() == [0, 0, 0, 0] and memory.read("t").tolist() == [7, 7, 7, 7]
    assert memory.used_bytes == 16


def test_a_reserved_tensor_refuses_writes():
    memory = small_ipu()
    memory.reserve("r", 8)
    with pytest.raises(InvalidArgument, match="tensor 'r' is reserved: it holds bytes but no values; put it"):
        memory.write_slice("r", 0, 2, np.ones(2, np.uint8))


def test_slices_read_write_and_accumulate_the_flat_range():
    memory = small_ipu()
    memory.allocate("t", np.zeros((2, 3), np.float32))
    memory.write_slice("t", 1, 4, np.array([1, 2, 3]))
    memory.add_slice("t", 3, 6, np.array([10, 10, 10]))
    assert memory.read("t").tolist() == [[0, 1, 2], [13, 10, 10]]
    assert memory.read_slice("t", 2, 4).tolist() == [2, 13]


@pytest.mark.parametrize("call, message", [
    (lambda m: m.read_slice("t", 2, 7), r"element range \[2, 7\) is outside \[0, 6\)"),
    (lambda m: m.add_slice("t", 0, 2, np.ones(3)), "3 values for the 2 elements"),
    (lambda m: m.allocate("u", np.zeros(4), Linear(2, 3)), r"tiles \[2, 5\) is outside the IPU's tiles \[0, 4\)"),
    (lambda m: m.allocate("u", np.zeros(4, np.float32), explicit([(0, 6), (1, 10)])), "not a whole number of 4-byte"),
    (lambda m: m.allocate("u", np.zeros(4, np.float32), explicit([(0, 8)])), "places 8 bytes but the tensor has 16"),
    (lambda m: m.allocate("u", np.zeros(1, np.uint8), explicit([(9, 1)])), "tile 9 is not on the IPU"),
])
def test_bad_requests_are_invalid_arguments(call, message):
    memory = small_ipu()
    memory.allocate("t", np.zeros(6, np.float32))
    with pytest.raises(InvalidArgument, match=message):
        call(memory)


def test_unknown_tensor_is_not_found():
    with pytest.raises(NotFound, match="no tensor 'nope' on IPU 0; put it there first"):
        small_ipu().read("nope")


# --- property: any sequence of allocations and frees keeps exact per-tile accounting ----------------------------
TILES, TILE_BYTES = 6, 64
alloc = st.tuples(st.just("alloc"), st.integers(0, 7), st.integers(0, 120),
                  st.one_of(st.tuples(st.integers(0, TILES - 1), st.integers(1, TILES)),
                            st.lists(st.tuples(st.integers(0, TILES - 1), st.integers(0, 40)), min_size=1, max_size=4)))
free = st.tuples(st.just("free"), st.integers(0, 7), st.just(0), st.just(None))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(alloc, free), max_size=40))
def test_random_alloc_and_free_never_exceed_a_tile_and_free_returns_memory_exactly(ops):
    memory = small_ipu(TILES, TILE_BYTES)
    model: dict[str, np.ndarray] = {}  # name -> bytes per tile, kept independently of IpuMemory
    for op, key, size, how in ops:
        name = f"t{key}"
        if op == "free":
            if name in model:
                memory.free(name)
                del model[name]
            continue
        if isinstance(how, list):  # explicit: the listed (tile, bytes), the tensor is their total
            mapping, size = explicit(how), sum(b for _, b in how)
            need = np.zeros(TILES, np.int64)
            for tile, nbytes in how:
                need[tile] += nbytes
        else:
            first, count = how[0], min(how[1], TILES - how[0])
            mapping = Linear(first, count)
            need = np.zeros(TILES, np.int64)
            for s in place(mapping, size, 1, TILES, name):
                need[s.tile] += s.stop - s.start
        others = sum((v for k, v in model.items() if k != name), np.zeros(TILES, np.int64))
        fits = bool(np.all(others + need <= TILE_BYTES))
        try:
            memory.allocate(name, np.zeros(size, np.uint8), mapping)
            assert fits, "allocated although a tile had no room"
            model[name] = need
        except ResourceExhausted:
            assert not fits, "refused although every tile had room"
        expected = sum(model.values(), np.zeros(TILES, np.int64))
        assert np.array_equal(memory.used, expected)
        assert memory.used.max(initial=0) <= TILE_BYTES
    for name in list(model):
        memory.free(name)
    assert memory.used_bytes == 0 and not memory.tensors
