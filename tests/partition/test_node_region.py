"""node_region: the IPUs a job that must hold the listed machines (sbatch -w) may be placed on, 4 IPUs a machine:
the aligned block of the job's size around them (their machine for a job smaller than one), or None when no one
block of that size holds them all. And expand: Slurm host lists read into names, or a refusal saying how to write
one."""

from __future__ import annotations

import pytest

from vipu.partition.node_names import expand
from vipu.partition.placement import block_mask, ipus_in, node_region


@pytest.mark.parametrize(("machines", "ipus", "want"), [
    ([2], 1, range(8, 12)),  # smaller than a machine: anywhere on it
    ([2], 4, range(8, 12)),
    ([3], 8, range(8, 16)),  # more than listed: the block of 8 around it
    ([2, 3], 8, range(8, 16)),
    ([1], 16, range(0, 16)),
    ([0, 3], 16, range(0, 16)),
    ([5, 6], 32, range(0, 32)),
    ([0, 1], 2, None),  # two machines, a job of one
    ([1, 2], 8, None),  # across the boundary of two blocks of 8
    ([3, 4], 16, None),
])
def test_the_region_is_the_aligned_block_of_the_jobs_size_around_the_machines(machines, ipus, want):
    region = node_region(machines, ipus, 4)
    assert (None if region is None else ipus_in(region)) == (None if want is None else list(want))
    if region is not None:
        assert region == block_mask(want[0], len(want))


@pytest.mark.parametrize(("text", "said"), [
    ("ag[00-", "has an unmatched bracket"),
    ("ag]", "has an unmatched bracket"),
    ("ag[3-1]", "the range 3-1 runs backwards"),
    ("a,,b", "has an empty name"),
    ("ag[x]", "[x] is not a list of numbers and ranges"),
    ("n[0-99999]", "names more than 65,536 nodes"),
])
def test_a_bad_host_list_is_refused_saying_how_to_write_one(text, said):
    with pytest.raises(ValueError, match=said.replace("[", r"\[").replace("]", r"\]")):
        expand(text)
