"""Properties over random workloads in virtual time: backfill never delays a reservation, no job deadlocks or
runs on part of a block, the incremental queue order is the multifactor order, and placement is the block-by-block
buddy best fit."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.partition.placement import largest_free_block, place
from vipu.scheduler.bits import best_fit, first_block, has_block
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.order import PendingOrder
from vipu.scheduler.policies.base import QueuedJob
from vipu.scheduler.multifactor import FairShare
from vipu.scheduler.job_states import TERMINAL

from tests.scheduler.builders import POD16, POD64, drive, make, sleep, spec

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STATIC = {"weights": {"age": 0, "fairshare": 0, "job_size": 0, "qos": 0}}  # priority = -nice only

job_st = st.tuples(
    st.integers(0, 100),  # arrival
    st.sampled_from([1, 2, 4, 8, 16]),  # IPUs
    st.integers(1, 60),  # run time == time limit (exact estimates)
)


def workload(jobs):
    """Later submissions get a larger nice, so priority strictly follows submission order."""
    ordered = sorted(jobs, key=lambda j: j[0])
    return [(t, spec(ipus=ipus, time_limit=d, workload=sleep(d), nice=i)) for i, (t, ipus, d) in enumerate(ordered)]


@FAST
@given(st.lists(job_st, min_size=1, max_size=18), st.sampled_from(["backfill", "priority", "fifo"]))
def test_no_job_starts_later_than_its_first_reservation(jobs, policy):
    s = make(policy=policy, **STATIC)
    out = drive(s, workload(jobs))
    for job_id, estimate in out["first_estimate"].items():
        assert out["start"][job_id] <= estimate + 1e-9, (job_id, estimate, out["start"][job_id])
    assert all(j.state in TERMINAL for j in s.table.jobs.values())  # nothing deadlocks


@FAST
@given(st.lists(job_st, min_size=1, max_size=18), st.sampled_from(["backfill", "priority", "fifo", "sjf"]))
def test_every_job_finishes_whole_blocks_only_and_estimates_change_no_start(jobs, policy):
    runs = []
    for estimates in (True, False):
        s = make(policy=policy)
        runs.append(drive(s, workload(jobs), estimates=estimates)["start"])  # drive checks the gang invariant
        assert all(j.state in TERMINAL for j in s.table.jobs.values())
    assert runs[0] == runs[1]


@FAST
@given(st.lists(job_st, min_size=2, max_size=18))
def test_backfill_starts_the_top_job_no_later_than_strict_priority_when_it_arrives_first(jobs):
    """The top-priority job is submitted first; with exact time limits backfill never delays it."""
    work = workload(jobs)
    start = {}
    for policy in ("priority", "backfill"):
        s = make(policy=policy, **STATIC)
        start[policy] = drive(s, work)["start"]
    assert start["backfill"][1] <= start["priority"][1]


def free_blocks(available: int, total: int, size: int) -> list[int]:
    """The reference: first IPUs of the wholly available aligned blocks of `size`, one block at a time."""
    full = (1 << size) - 1
    return [first for first in range(0, total - size + 1, size) if (available >> first) & full == full]


def reference_place(available: int, total: int, size: int) -> int | None:
    """Buddy best fit, block by block: the candidate whose largest wholly available enclosing block is smallest."""
    candidates = free_blocks(available, total, size)
    hole = dict.fromkeys(candidates, size)
    level = size * 2
    while level <= total:
        free_here = set(free_blocks(available, total, level))
        for first in candidates:
            if first - first % level in free_here:
                hole[first] = level
        level *= 2
    return min(candidates, key=lambda first: (hole[first], first), default=None)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, (1 << 256) - 1), st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.sampled_from([16, 64, 192, 256]))
def test_place_and_best_fit_are_the_block_by_block_best_fit(mask, size, total):
    mask &= (1 << total) - 1
    if size <= total:
        want = reference_place(mask, total, size)
        assert place(mask, total, size) == best_fit(mask, total, size) == want
        assert has_block(mask, size, total) == (want is not None)
        assert (first_block(mask, size, total) is None) == (want is None)
        largest = max((s for s in (1 << k for k in range(9)) if s <= total and free_blocks(mask, total, s)), default=0)
        assert largest_free_block(mask, total) == largest


queued_st = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8, 16]), st.integers(0, 3000), st.sampled_from(["ann", "bob", "cy"]),
              st.sampled_from(["low", "normal", "high"]), st.integers(-50, 50) | st.integers(1000, 4000)),
    min_size=1, max_size=30,
)


@FAST
@given(queued_st, st.lists(st.integers(0, 6000), min_size=1, max_size=4), st.data())
def test_incremental_order_is_the_multifactor_order(rows, times, data):
    config = SchedulerConfig(max_age=1000, weights={"age": 1000, "fairshare": 0, "job_size": 100, "qos": 2000})
    order = PendingOrder("priority", config, POD16.ipus, FairShare(100))
    jobs = [QueuedJob(i + 1, ipus, 60.0, float(t), user, qos, nice) for i, (ipus, t, user, qos, nice) in enumerate(rows)]
    live = {}
    for now in sorted(times):
        for job in jobs:
            if job.submit_time <= now and job.id not in live and data.draw(st.booleans()):
                order.add(job, now)
                live[job.id] = job
        if live and data.draw(st.booleans()):
            gone = data.draw(st.sampled_from(sorted(live)))
            order.remove(gone)
            del live[gone]
        got = [j.id for j in order.iterate(now)]

        def priority(j):
            age = 1000 * min(1.0, (now - j.submit_time) / 1000)
            # under 1 it is 1, as Slurm's: those jobs wait in submit order behind the rest
            return max(1.0, age + 100 * j.ipus / 16 + 2000 * {"low": 0, "normal": 0.5, "high": 1}[j.qos] - j.nice)

        want = [j.id for j in sorted(live.values(), key=lambda j: (-priority(j), j.submit_time, j.id))]
        assert got == want


def test_fairshare_moves_a_heavy_user_back():
    s = make(priority_calc_period=0, weights={"age": 0, "fairshare": 1000, "job_size": 0, "qos": 0})
    s.submit(spec(ipus=16, user="ann", time_limit=100, workload=sleep(100)), 0)
    s.cycle(0)
    s.job_finished(1, 100)
    s.submit(spec(ipus=16, user="ann"), 101)
    s.submit(spec(ipus=16, user="bob"), 102)
    s.submit(spec(ipus=16, user="bob"), 102)
    s.cycle(103)
    assert s.job(3).state.value == "RUNNING"
    rows = {r.job_id: r for r in s.view().priorities(103)}
    assert rows[2].fairshare < rows[4].fairshare


busy_st = st.lists(
    st.tuples(st.integers(0, 300), st.sampled_from([1, 2, 4, 4, 4, 8, 16, 32, 64]), st.integers(1, 120),
              st.sampled_from([1, 2, 4]), st.sampled_from(["low", "normal"])),
    min_size=20, max_size=60,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_st, st.sampled_from(["backfill", "priority", "fifo", "sjf"]), st.sampled_from([3, 100]))
def test_estimates_change_no_start_in_long_queues(jobs, policy, max_job_test):
    """Queues longer than the walk's small-queue limit, large jobs among small ones and time limits above run times:
    the walk without estimates (lazy reservations, skipped cycles, passed-over sizes) starts what the full one does."""
    arrivals = [(t, spec(ipus=ipus, time_limit=run * slack, workload=sleep(run), qos=qos))
                for t, ipus, run, slack, qos in sorted(jobs, key=lambda j: j[0])]
    runs = []
    for estimates in (True, False):
        s = make(pod=POD64, policy=policy, max_job_test=max_job_test)
        runs.append(drive(s, arrivals, estimates=estimates)["start"])
    assert runs[0] == runs[1]


@FAST
@given(queued_st, st.lists(st.booleans(), min_size=30, max_size=30), st.integers(0, 6000))
def test_gated_jobs_keep_their_place_in_the_order(rows, gated, now):
    config = SchedulerConfig(max_age=1000, weights={"age": 1000, "fairshare": 0, "job_size": 100, "qos": 2000})
    for kind in ("priority", "submit", "shortest"):
        order = PendingOrder(kind, config, POD16.ipus, FairShare(100))
        jobs = [QueuedJob(i + 1, ipus, 60.0 * (1 + nice % 3), float(t), user, qos, nice)
                for i, (ipus, t, user, qos, nice) in enumerate(rows) if t <= now]
        for job in jobs:
            order.add(job, now, gated[job.id % 30])
        everything = [j.id for j in order.iterate(now, gated=True)]
        assert sorted(everything) == sorted(j.id for j in jobs)
        assert [j.id for j in order.iterate(now)] == [i for i in everything if not gated[i % 30]]
