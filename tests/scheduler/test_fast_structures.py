"""The structures that keep a cycle fast on 65,536 IPUs and with 100,000 pending jobs give the decisions the plain
ones give, on random states: the backfill timeline of a large Pod against the mask-per-interval one of a small Pod, sjf's
walk, which stops once no job still to come can start, against the same walk told nothing of its order, the
placement from free IPUs kept rack by rack against placement.place(), and the choice of victims by evictable job
against the choice block by block, and the union of a walk's reservations kept as they are made against the one
made afresh."""

from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.scheduler.bits import aligned_starts, best_fit, block
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.policies import engine
from vipu.scheduler.policies.base import QueuedJob, RunningJob, ScheduleRequest
from vipu.scheduler.policies.preempt import Victims, choose_victims, rank, room_of
from vipu.scheduler.policies.interval_timeline import IntervalTimeline
from vipu.scheduler.policies.rack_masks import RACK, RackMasks
from vipu.scheduler.policies.reservations import Timeline
from vipu.scheduler.policies.reserved_before import ReservedBefore


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SIZES = [1, 2, 4, 8, 16]


@st.composite
def running_jobs(draw, total: int, now: float) -> list[RunningJob]:
    """Jobs on aligned, disjoint blocks (as placement makes them), some overdue, many ending at the same moment."""
    free, jobs = (1 << total) - 1, []
    for job_id in range(draw(st.integers(0, 24))):
        size = draw(st.sampled_from(SIZES))
        first = best_fit(free, total, size)
        if first is None:
            continue
        free &= ~block(first, size)
        end = now + draw(st.sampled_from([-5, 0, 10, 20, 30, 45, 60, 90, 120, 300]))
        jobs.append(RunningJob(job_id, size, first, now - 10, float(end), f"u{job_id % 3}",
                               draw(st.sampled_from(["low", "normal", "high"]))))
    return jobs


@st.composite
def timeline_cases(draw):
    total = draw(st.sampled_from([16, 64]))
    now = float(draw(st.integers(0, 50)))
    running = draw(running_jobs(total, now))
    used = 0
    for r in running:
        used |= block(r.first_ipu, r.ipus)
    failed = draw(st.integers(0, (1 << total) - 1)) & draw(st.integers(0, (1 << total) - 1)) & \
        draw(st.integers(0, (1 << total) - 1))
    steps = []
    # the same mask objects step after step, as a walk passes its own: the timeline keeps answers by mask
    allowed_masks = [(1 << total) - 1, (1 << (total // 2)) - 1, (1 << total) - 1 - 0xF]
    for _ in range(draw(st.integers(1, 30))):
        size = draw(st.sampled_from(SIZES))
        kind = draw(st.sampled_from(["reserve", "earliest", "earliest", "release"]))
        if kind == "reserve":
            start = now + draw(st.sampled_from([0, 0, 5, 10, 30, 60, 100]))
            first = draw(st.integers(0, total // size - 1)) * size
            steps.append(("reserve", start, start + draw(st.sampled_from([1, 10, 20, 60, 200])), first, size))
        elif kind == "release" and running:
            victim = draw(st.sampled_from(running))
            steps.append(("release", block(victim.first_ipu, victim.ipus)))
        else:
            allowed = draw(st.sampled_from(allowed_masks))
            not_before = draw(st.sampled_from([None, now, now + 15, now + 60]))
            steps.append(("earliest", size, float(draw(st.sampled_from([1, 10, 30, 60, 250]))), allowed,
                          not_before))
    return total, now, running, ((1 << total) - 1) & ~used & ~failed, steps, draw(st.integers(0, len(running)))


@FAST
@given(timeline_cases())
def test_the_timeline_answers_as_the_plain_one(case):
    total, now, running, free, steps, grouped = case
    releases = [(r.end_by, r.first_ipu, r.ipus) for r in running]
    groups: dict[float, tuple[list[int], int]] = {}  # some of them by end time, as JobTable.release_groups gives
    for r in running[:grouped]:
        blocks, mask = groups.get(r.end_by, ([], 0))
        groups[r.end_by] = (blocks + [r.first_ipu, r.ipus], mask | block(r.first_ipu, r.ipus))
    fast = Timeline(now, free, releases[grouped:], total, groups)
    plain = IntervalTimeline(now, free, releases, total)
    for step in steps:
        if step[0] == "reserve":
            fast.reserve(*step[1:])
            plain.reserve(*step[1:])
        elif step[0] == "release":
            fast.release_now(step[1])
            plain.release_now(step[1])
        else:
            size, length, allowed, not_before = step[1:]
            assert fast.first_time(size, allowed) == plain.first_time(size, allowed)
            found = fast.earliest(size, length, allowed, not_before)
            assert found == plain.earliest(size, length, allowed, not_before), step
            if found is not None and step is not steps[-1]:  # take it, as the walk does with a reservation
                fast.reserve(found[0], found[0] + length, found[1], size)
                plain.reserve(found[0], found[0] + length, found[1], size)


@FAST
@given(timeline_cases())
def test_a_search_begun_where_the_last_one_ended_finds_what_a_fresh_timeline_finds(case):
    """Timeline.earliest begins where the last search of its size and mask ended: after any reservations, releases
    and searches for longer or shorter jobs, it finds what a timeline that was asked nothing before finds."""
    total, now, running, free, steps, _ = case
    releases = [(r.end_by, r.first_ipu, r.ipus) for r in running]
    kept, done = Timeline(now, free, releases, total), []
    for step in steps:
        if step[0] == "earliest":
            size, length, allowed, _ = step[1:]
            fresh = Timeline(now, free, releases, total)
            for done_step in done:
                _apply_step(fresh, done_step)
            found = kept.earliest(size, length, allowed)
            assert found == fresh.earliest(size, length, allowed), step
            if found is None:
                continue
            step = ("reserve", found[0], found[0] + length, found[1], size)  # taken, as the walk takes it
        _apply_step(kept, step)
        done.append(step)


def _apply_step(timeline, step):
    if step[0] == "reserve":
        timeline.reserve(*step[1:])
    else:
        timeline.release_now(step[1])


queued_st = st.tuples(st.sampled_from(SIZES), st.sampled_from([10, 30, 60, 120, 600]),
                      st.sampled_from(["low", "normal", "high"]))


@st.composite
def walk_cases(draw, totals=(16, 64), rows=queued_st):
    total = draw(st.sampled_from(totals))
    now = 100.0
    running = draw(running_jobs(total, now))
    used = 0
    for r in running:
        used |= block(r.first_ipu, r.ipus)
    rows = draw(st.lists(rows, min_size=1, max_size=60))
    queued = [QueuedJob(1000 + i, ipus, float(limit), float(i), f"u{i % 4}", qos) for i, (ipus, limit, qos)
              in enumerate(rows)]
    return total, now, running, ((1 << total) - 1) & ~used, queued, draw(st.integers(1, 12)), draw(st.booleans())


def _request(total, now, running, free, queued, max_job_test, estimates, qos) -> ScheduleRequest:
    sizes, shortest = {}, {}
    for j in queued:
        sizes[j.ipus] = sizes.get(j.ipus, 0) + 1
        shortest[j.ipus] = min(shortest.get(j.ipus, j.time_limit), j.time_limit)
    preemptors = {}
    for j in queued:
        if qos[j.qos].preempt:
            preemptors[j.ipus] = preemptors.get(j.ipus, 0) + 1
    return ScheduleRequest(now=now, total_ipus=total, available_mask=free, pending=iter(queued), running=running,
                           qos=qos, max_job_test=max_job_test, sizes=sizes, preemptors=preemptors,
                           shortest=shortest, estimates=estimates)


QOS = SchedulerConfig(qos={
    "low": {"priority": 0}, "normal": {"priority": 10, "preempt": ["low"], "max_jobs_per_user": 2},
    "high": {"priority": 20, "preempt": ["low", "normal"]},
}).qos


def _decided(decision, queued):
    return (decision.starts, decision.preemptions, [decision.explain(j) for j in queued])


@FAST
@given(walk_cases())
def test_the_walk_decides_the_same_on_either_timeline(case):
    total, now, running, free, queued, max_job_test, estimates = case
    ordered = sorted(queued, key=lambda j: (j.time_limit, j.submit_time, j.id))  # sjf's: searches begin later
    for mode, order in (("backfill", queued), ("strict", queued), ("backfill", ordered)):
        with patch.object(engine, "SMALL_POD", 0):  # the list of reserved blocks, as on a large Pod
            fast = engine.run(_request(total, now, running, free, order, max_job_test, estimates, QOS), order,
                              mode)
        with patch.object(engine, "SMALL_POD", 1 << 20):  # a mask per interval
            plain = engine.run(_request(total, now, running, free, order, max_job_test, estimates, QOS), order,
                               mode)
        assert _decided(fast, order) == _decided(plain, order)


def test_a_timeline_built_from_release_groups_after_an_eviction_frees_no_evicted_block_at_its_old_end():
    """The timeline comes from the running jobs' release groups (JobTable.release_groups) less the jobs the walk
    evicted before building it: a victim's block, taken by the job that evicted it, is not free at the victim's old
    end, and a job waiting behind is estimated as on a timeline of the running jobs left."""
    now = 100.0
    low_a, low_b = RunningJob(1, 8, 0, 90.0, 110.0, "u0", "low"), RunningJob(2, 8, 8, 90.0, 400.0, "u1", "low")
    queued = [QueuedJob(10, 8, 600.0, 0.0, "u2", "high"), QueuedJob(11, 8, 30.0, 1.0, "u3", "low")]
    groups = {r.end_by: ([r.first_ipu, r.ipus], block(r.first_ipu, r.ipus)) for r in (low_a, low_b)}
    for small_pod in (0, 1 << 20):  # a list of reserved blocks (a large Pod's), a mask per interval
        with patch.object(engine, "SMALL_POD", small_pod):
            request = _request(16, now, [low_a, low_b], 0, queued, 10, True, QOS)
            request.releases = groups
            decision = engine.run(request, queued, "backfill")
            plain = engine.run(_request(16, now, [low_a, low_b], 0, queued, 10, True, QOS), queued, "backfill")
        assert [(p.job_id, p.by_job_id) for p in decision.preemptions] == [(1, 10)]
        assert decision.pending[11].estimated_start == 400.0  # when job 2 ends, not job 1's old 110
        assert _decided(decision, queued) == _decided(plain, queued)


@FAST
@given(walk_cases())
def test_sjf_stops_sooner_and_decides_the_same(case):
    """In sjf's order (time limit first) the walk told so stops once no job still to come can start; the starts,
    evictions and (with estimates on, as the live server runs) every job's reason and estimate are those of the walk
    that goes on."""
    total, now, running, free, queued, max_job_test, estimates = case
    ordered = sorted(queued, key=lambda j: (j.time_limit, j.submit_time, j.id))
    told = engine.run(_request(total, now, running, free, ordered, max_job_test, estimates, QOS), ordered,
                      "backfill", ascending_limits=True)
    plain = engine.run(_request(total, now, running, free, ordered, max_job_test, estimates, QOS), ordered,
                       "backfill")
    if estimates:
        assert _decided(told, ordered) == _decided(plain, ordered)
    else:  # nobody reads the reasons (trace replay): a walk that stops sooner explains fewer jobs on its way
        assert _decided(told, ordered)[:2] == _decided(plain, ordered)[:2]


@FAST
@given(walk_cases())
def test_the_walk_that_stops_early_starts_what_a_whole_walk_starts(case):
    """Told how many jobs of each size wait (the hints that let the walk stop once nothing can start, kept through
    starts and evictions), the walk starts and evicts what the walk told nothing, which looks at every job, does."""
    total, now, running, free, queued, max_job_test, estimates = case
    ordered = sorted(queued, key=lambda j: (j.time_limit, j.submit_time, j.id))
    for order, ascending in ((ordered, True), (queued, False)):
        hinted = engine.run(_request(total, now, running, free, order, max_job_test, estimates, QOS), order,
                            "backfill", ascending_limits=ascending)
        whole = _request(total, now, running, free, order, max_job_test, estimates, QOS)
        whole.sizes = whole.preemptors = whole.shortest = None
        assert _decided(hinted, order)[:2] == _decided(engine.run(whole, order, "backfill"), order)[:2]


@FAST
@given(walk_cases(totals=(64, 256), rows=st.tuples(st.sampled_from(SIZES + [32, 64]),
                                                   st.sampled_from([10, 30, 60, 120, 600]),
                                                   st.sampled_from(["low", "normal", "high", "high"]))))
def test_the_walk_evicts_the_same_when_victims_are_looked_at_from_where_they_were_left(case):
    """Victims told what a job may use skip the candidates ruled out for it earlier in the walk: every eviction and
    start is the one a look at every candidate makes."""
    total, now, running, free, queued, max_job_test, estimates = case
    choose = Victims.choose
    for mode in ("backfill", "strict"):
        keyed = engine.run(_request(total, now, running, free, queued, max_job_test, estimates, QOS), queued, mode)
        with patch.object(Victims, "choose", lambda self, room, usable=None: choose(self, room)):
            plain = engine.run(_request(total, now, running, free, queued, max_job_test, estimates, QOS), queued,
                               mode)
        assert _decided(keyed, queued) == _decided(plain, queued)


@FAST
@given(walk_cases(totals=(256, 512), rows=st.tuples(st.sampled_from(SIZES + [32, 64, 128]),
                                                    st.sampled_from([10, 30, 60, 120, 600]),
                                                    st.sampled_from(["low", "normal", "high"]))))
def test_the_walk_places_the_same_from_racks(case):
    """The walk that keeps its free IPUs rack by rack from its first placement starts the same jobs on the same
    blocks as the one that asks placement.place() each time."""
    total, now, running, free, queued, max_job_test, estimates = case
    for mode in ("backfill", "strict"):
        with patch.object(engine, "SMALL_POD", 0), patch.object(engine, "RACKS_AFTER", 0):
            racks = engine.run(_request(total, now, running, free, queued, max_job_test, estimates, QOS), queued,
                               mode)
        with patch.object(engine, "SMALL_POD", 1 << 20):
            plain = engine.run(_request(total, now, running, free, queued, max_job_test, estimates, QOS), queued,
                               mode)
        assert _decided(racks, queued) == _decided(plain, queued)


@st.composite
def rack_states(draw):
    """A Pod of 4 to 16 racks, partly taken by aligned blocks of every size, and some IPUs of it failed."""
    total = RACK * draw(st.sampled_from([4, 8, 16]))
    free = (1 << total) - 1
    for _ in range(draw(st.integers(0, 40))):
        size = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]))
        first = draw(st.integers(0, total // size - 1)) * size
        free &= ~block(first, size)
    if draw(st.booleans()):
        free &= ~draw(st.integers(0, (1 << total) - 1)) | draw(st.integers(0, (1 << total) - 1))
    return total, free


@FAST
@given(rack_states(), st.data())
def test_racks_place_as_placement_does(state, data):
    """RackMasks answers placement.place() for every size, through placements and IPUs given back."""
    total, free = state
    racks = RackMasks(free, total)
    for _ in range(data.draw(st.integers(1, 12))):
        for size in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
            assert racks.place(size) == best_fit(free, total, size), size
        size = data.draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]))
        first = best_fit(free, total, size)
        if first is not None and data.draw(st.booleans()):
            free &= ~block(first, size)
            racks.take(first, size)
        else:  # an eviction gives back a block, less its failed IPUs
            size = data.draw(st.sampled_from([1, 4, 16, 64, 128]))
            first = data.draw(st.integers(0, total // size - 1)) * size
            free |= block(first, size) & data.draw(st.sampled_from([(1 << total) - 1, (1 << total) - 1 - 0x10]))
            racks.refresh(first, size, free)


def plain_victims(job, candidates, free, usable, total, now, qos_priority):
    """choose_victims as it was: every aligned block that free and evictable IPUs fill, its victims IPU by IPU."""
    if not candidates:
        return None
    owner = [None] * total
    evictable = 0
    for r in candidates:
        evictable |= block(r.first_ipu, r.ipus)
        for ipu in range(r.first_ipu, r.first_ipu + r.ipus):
            owner[ipu] = r
    size = job.ipus
    starts = aligned_starts((free | evictable) & usable, size, total)
    best_key, best = None, None
    while starts:
        first = (starts & -starts).bit_length() - 1
        starts &= starts - 1
        victims = {}
        for ipu in range(first, first + size):
            r = owner[ipu]
            if r is not None and r.id not in victims:
                victims[r.id] = r
        if not victims:
            continue
        chosen = sorted(victims.values(), key=lambda r: r.id)
        key = (max(qos_priority.get(r.qos, 0) for r in chosen), len(chosen),
               sum(r.ipus * max(0.0, now - r.start_time) for r in chosen), first)
        if best_key is None or key < best_key:
            best_key, best = key, (first, chosen)
    return best


def _victim_case(case, size, data):
    """Candidates drawn from the running jobs, what the preempting job may use, the job and the QOS priorities."""
    total, now, running, free, _, _ = case
    candidates = [r for r in running if data.draw(st.booleans())]
    usable = data.draw(st.sampled_from([(1 << total) - 1, ((1 << total) - 1) ^ 0xF0, (1 << (total // 2)) - 1]))
    return total, now, candidates, free, usable, QueuedJob(999, size, 60.0, 0.0, "u9", "high"), \
        {"low": 0, "normal": 10, "high": 20}


@FAST
@given(timeline_cases(), st.sampled_from(SIZES + [32, 64]), st.data())
def test_victims_are_chosen_as_block_by_block(case, size, data):
    total, now, candidates, free, usable, job, priority = _victim_case(case, size, data)
    assert choose_victims(job, candidates, free & usable, usable, total, now, priority) == \
        plain_victims(job, candidates, free & usable, usable, total, now, priority)


@FAST
@given(timeline_cases(), st.sampled_from(SIZES + [32, 64]), st.data())
def test_victims_kept_through_evictions_choose_as_a_fresh_look(case, size, data):
    """The walk's Victims, told of each eviction, choose what choose_victims picks from the candidates left."""
    total, now, candidates, free, usable, job, priority = _victim_case(case, size, data)
    gone: set[int] = set()
    index = Victims(candidates, size, total, now, priority, gone)
    keyed = Victims(candidates, size, total, now, priority, gone)  # told what the job may use (always `usable`)
    for _ in range(data.draw(st.integers(1, 4))):
        left = [r for r in candidates if r.id not in gone]
        evictable = 0
        for r in left:
            evictable |= block(r.first_ipu, r.ipus)
        fresh = choose_victims(job, left, free & usable, usable, total, now, priority)
        room = room_of(free & usable, evictable, usable, total)
        assert index.choose(room) == fresh
        assert keyed.choose(room, "usable") == fresh
        if fresh is None:
            return
        first, victims = fresh
        gone.update(v.id for v in victims)
        index.evicted(victims)
        keyed.evicted(victims)
        for v in victims:
            free |= block(v.first_ipu, v.ipus)
        free &= ~block(first, size)  # the preempting job takes its block


@FAST
@given(timeline_cases(), st.sampled_from(SIZES + [32, 64]), st.data())
def test_victims_from_a_ranking_made_before_evictions_choose_as_from_those_left(case, size, data):
    """A walk ranks a QOS's candidates once; a Victims made from that ranking after some of them were evicted
    chooses what one made from the candidates left chooses."""
    total, now, candidates, free, usable, job, priority = _victim_case(case, size, data)
    gone = {r.id for r in candidates if data.draw(st.booleans())}
    left = [r for r in candidates if r.id not in gone]
    evictable = 0
    for r in left:
        evictable |= block(r.first_ipu, r.ipus)
    room = room_of(free & usable, evictable, usable, total)
    ranked = Victims.from_ranked(rank(candidates, now, priority), size, total, gone)
    assert ranked.choose(room) == Victims(left, size, total, now, priority, set()).choose(room)


@FAST
@given(st.lists(st.tuples(st.sampled_from(["reserve", "ask"]), st.integers(0, 12), st.integers(0, 63),
                          st.sampled_from(SIZES)), max_size=40))
def test_the_reserved_union_kept_as_reservations_come_equals_one_made_afresh(steps):
    """ReservedBefore.before(end) is the OR of the blocks of the reservations that begin before `end`, and equal
    keys come with equal masks, whatever order reservations and questions come in."""
    reservations: list[tuple[float, int]] = []
    kept, seen = ReservedBefore(reservations), {}
    for kind, at, first, size in steps:
        if kind == "reserve":
            reservations.append((float(at), block(first - first % size, size)))
            continue
        mask, key = kept.before(float(at))
        afresh = 0
        for start, blk in reservations:
            if start < at:
                afresh |= blk
        assert mask == afresh
        assert seen.setdefault(key, mask) == mask


@FAST
@given(st.lists(st.tuples(st.sampled_from(["reserve", "reserve", "ask", "ask", "release"]),
                          st.sampled_from([0, 5, 10, 30, 60]), st.sampled_from([1, 10, 20, 60, 200]),
                          st.integers(0, 63), st.sampled_from(SIZES)), max_size=40))
def test_the_overlapping_reservations_kept_by_moment_equal_those_found_afresh(steps):
    """Timeline.overlapping(start, end) keeps its answers by moment and extends them: whatever order reservations,
    evictions and questions (later or earlier ends) come in, it gives the reservations that overlap the span and
    the union of what they still hold."""
    total = 64
    timeline = Timeline(0.0, (1 << total) - 1, [], total)
    for kind, at, length, first, size in steps:
        first -= first % size
        if kind == "reserve":
            timeline.reserve(float(at), float(at + length), first, size)
        elif kind == "release":
            timeline.release_now(block(first, size))
        else:
            active, mask = timeline.overlapping(float(at), float(at + length))
            afresh = [r for r in timeline.reserved if r[0] < at + length and r[1] > at]
            assert sorted(map(id, active)) == sorted(map(id, afresh))
            union = 0
            for r in afresh:
                union |= block(r[2], r[3]) & ~r[4]
            assert mask == union
