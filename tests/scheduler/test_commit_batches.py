"""What a commit keeps together instead of job by job gives what the plain computation gives, on random histories:
the table's counters and used mask (counted out and settled once per commit) against counts over its jobs, the
queue order's lists after many leave at once against one removal each, and the priority rows a cycle records with
its terms kept by what they depend on against rows made one at a time."""

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.scheduler.bits import block
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.multifactor import FairShare, PriorityRows, breakdown, qos_factors
from vipu.scheduler.order import MANY, PendingOrder
from vipu.scheduler.policies.base import QueuedJob

from tests.scheduler.builders import POD64, make, sleep, spec

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

step_st = st.tuples(
    st.sampled_from(["submit", "submit", "submit", "evict", "cycle", "cycle", "finish", "cancel", "hold",
                     "release", "requeue", "fail"]),
    st.sampled_from([1, 2, 4, 8, 16, 32]),  # IPUs of a submit
    st.sampled_from([30, 60, 120]),  # its time limit
    st.sampled_from(["low", "normal", "high"]),  # its QOS (high evicts low)
    st.integers(0, 10_000),  # which job an action picks
)


def check_counts(s) -> None:
    t = s.table
    pending, ready = t.pending.values(), [q for i, q in t.pending.items() if i not in t.gated]
    assert +t.pending_sizes == Counter(q.ipus for q in pending)
    limits = {ipus: Counter(q.time_limit for q in pending if q.ipus == ipus) for ipus in {q.ipus for q in pending}}
    assert {ipus: +c for ipus, c in t.pending_limits.items() if +c} == limits
    assert t.shortest_limits() == {ipus: min(c) for ipus, c in limits.items()}
    assert +t.ready_sizes == Counter(q.ipus for q in ready)
    assert +t.ready_qos == Counter((q.qos, q.ipus) for q in ready)
    assert +t.ready_by_qos == Counter(q.qos for q in ready)
    assert set(t.ready_seq) == {q.id for q in ready}
    used = 0
    for r in t.running.values():
        used |= block(r.first_ipu, r.ipus)
    assert t.used_mask == used
    order = s.order
    for where, entries in order._lists.items():
        assert entries == sorted(entries) and entries
        assert {e[2] for e in entries} == {i for i, (w, _) in order._entry.items() if w == where}
    assert set(order.jobs) == set(t.pending)


@FAST
@given(st.lists(step_st, min_size=1, max_size=40), st.sampled_from(["backfill", "sjf", "priority"]))
def test_counters_and_used_mask_are_the_counts_of_the_jobs_after_every_commit(steps, policy):
    s = make(POD64, policy=policy)
    now = 0.0
    for action, ipus, limit, qos, pick in steps:
        now += 7.0
        running, pending = sorted(s.table.running), sorted(s.table.pending)
        if action == "submit":
            s.submit(spec(ipus=ipus, time_limit=limit, qos=qos, workload=sleep(limit)), now)
        elif action == "evict":  # low jobs, then a high one that may evict some of them
            for _ in range(64 // ipus):
                s.submit(spec(ipus=ipus, time_limit=limit, qos="low", workload=sleep(limit)), now)
            s.cycle(now)
            check_counts(s)
            s.submit(spec(ipus=2 * ipus, time_limit=limit, qos="high", workload=sleep(limit)), now)
            s.cycle(now)
        elif action == "cycle":
            s.cycle(now)
        elif action == "finish" and running:
            s.job_finished(running[pick % len(running)], now)
        elif action == "cancel" and (running or pending):
            ids = running + pending
            s.cancel([ids[pick % len(ids)]], now)
        elif action == "hold" and pending and not s.table.jobs[pending[pick % len(pending)]].held:
            s.hold(pending[pick % len(pending)], now)
        elif action == "release":
            held = [i for i in pending if s.table.jobs[i].held]
            if held:
                s.release(held[pick % len(held)], now)
        elif action == "requeue" and running:
            s.requeue(running[pick % len(running)], now)
        elif action == "fail" and running:
            s.fail_ipus([s.table.running[running[pick % len(running)]].first_ipu], now)
            s.repair_ipus(range(POD64.ipus))
        check_counts(s)


@settings(FAST, max_examples=25)
@given(st.randoms(use_true_random=False), st.sampled_from([(3 * MANY, 3 * MANY), (20 * MANY, MANY)]))
def test_many_leaving_together_leave_the_lists_one_removal_each_leaves(rng, sizes):
    """Lists that lose most of their entries (filtered) and a few (cut by slices)."""
    n, leaving = sizes
    config = SchedulerConfig(max_age=1000)
    together, one_by_one = (PendingOrder("priority", config, 64, FairShare(100)) for _ in range(2))
    for i in range(n):  # few distinct submit times: entries that differ only in their id
        job = QueuedJob(i + 1, rng.choice([1, 4, 16]), 60.0, float(rng.randrange(20)), rng.choice(["ann", "bob"]),
                        "normal")
        for order in (together, one_by_one):
            order.add(job, 100.0, gated=i % 5 == 0)
    gone = rng.sample(range(1, n + 1), rng.randint(MANY, leaving))
    together.remove_many(gone + [n + 1])  # (an id not in the queue is passed over)
    for job_id in gone:
        one_by_one.remove(job_id)
    assert together._lists == one_by_one._lists and together.jobs == one_by_one.jobs
    assert [j.id for j in together.iterate(100.0, gated=True)] == [j.id for j in one_by_one.iterate(100.0, gated=True)]


@FAST
@given(st.lists(st.tuples(st.sampled_from([1, 2, 4, 64]), st.sampled_from([0.0, 10.0, 3000.0, 5000.0]),
                          st.sampled_from(["ann", "bob", "cy"]), st.sampled_from(["low", "normal", "high"]),
                          st.integers(-20, 20), st.sampled_from([None, None, 7])), min_size=1, max_size=40))
def test_rows_with_terms_kept_are_the_rows_made_one_at_a_time(rows):
    config = SchedulerConfig(max_age=4000, weights={"age": 1000, "fairshare": 300, "job_size": 100, "qos": 2000})
    fairshare = {"ann": 0.25, "bob": 0.7071}
    kept = PriorityRows(4500.0, config, 64, fairshare)
    for i, (ipus, submit, user, qos, nice, fixed) in enumerate(rows):
        job = QueuedJob(i + 1, ipus, 60.0, submit, user, qos, nice, fixed_priority=fixed)
        got = kept.row(job)
        assert got == breakdown(job, 4500.0, config, 64, fairshare)  # a fresh PriorityRows: nothing kept
        age = 1000 * min(1.0, max(0.0, 4500.0 - submit) / 4000)  # (a submit time after now: age 0)
        fs = 300 * fairshare.get(user, 1.0)
        size = 100 * ipus / 64
        q = 2000 * qos_factors(config)[qos]
        total = age + fs + size + q - nice if fixed is None else float(fixed)
        assert (got.job_id, got.user, got.nice) == (i + 1, user, nice)
        assert (got.total, got.age, got.fairshare, got.job_size, got.qos) == (
            round(total, 3), round(age, 3), round(fs, 3), round(size, 3), round(q, 3))
