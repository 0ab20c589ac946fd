"""The poplin-style matmul estimate behind bench_planner's "poplin-style matmul plans" table."""

from vipu.jobs.matmul_plan import AMP_MACS_PER_CYCLE, plan_matmul, vertex_cycles

TILES = 1472


def test_vertex_follows_poplibs_amp_estimate():
    # 60 rows over 6 workers (10 each): 6 x (37 + 7 x 4) cycles zeroing, then the tag cost of 14; one input and
    # one output channel group: 50 + 13 + 11 + 18 + 7 + 32 weight loads + 404
    assert vertex_cycles(1, 60, 16, 16) == 535


def test_few_attention_groups_plan_less_efficiently():
    """Q K^T of one head at SL384 (384 x 64 x 384 a group): 32 groups (micro-batch 2 x 16 heads) spread each group
    over more tiles, in smaller pieces, than 96 (micro-batch 8 x 12 heads), so the IPU does fewer MACs a cycle."""
    shape = (384, 64, 384)
    few, many = (plan_matmul(groups, *shape, TILES).efficiency(groups, *shape, TILES) for groups in (32, 96))
    assert few < many < 1
    assert few < 0.85 * many


def test_plan_uses_at_most_the_tiles_and_never_beats_the_amp():
    plan = plan_matmul(32, 384, 64, 384, TILES)
    assert plan.tiles_used <= TILES
    assert plan.cycles >= 32 * 384 * 64 * 384 / (TILES * AMP_MACS_PER_CYCLE)
