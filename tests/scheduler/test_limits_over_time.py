"""Estimated starts and reservations keep the limits the scheduler enforces (array %N, QOS per-user limits), and
sjf keeps backfill's promise to the job at the head of its order: properties over random workloads in virtual
time, plus the acceptance tester's repros."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vipu.scheduler.config import DEFAULT_QOS, QosSpec
from vipu.scheduler.job_states import TERMINAL

from tests.scheduler.builders import POD16, drive, make, sleep, spec

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STATIC = {"weights": {"age": 0, "fairshare": 0, "job_size": 0, "qos": 0}}  # priority = -nice only
QOS = {**DEFAULT_QOS, "capped": QosSpec(priority=50, max_jobs_per_user=2, max_ipus_per_user=8)}

limited_st = st.lists(
    st.tuples(
        st.integers(0, 100),  # arrival
        st.sampled_from([1, 2, 4, 8, 16]),  # IPUs
        st.integers(1, 60),  # run time == time limit (exact estimates)
        st.sampled_from(["plain", "array", "capped"]),
        st.sampled_from(["ann", "bob"]),
        st.integers(1, 3),  # array %N
    ),
    min_size=1, max_size=12,
)


def limited_workload(jobs):
    out = []
    for i, (t, ipus, d, kind, user, n) in enumerate(sorted(jobs, key=lambda j: j[0])):
        extra = {"array": f"0-3%{n}"} if kind == "array" else {"qos": "capped"} if kind == "capped" else {}
        if kind == "capped":
            ipus = min(ipus, 8)
        out.append((t, spec(ipus=ipus, time_limit=d, workload=sleep(d), nice=i, user=user, **extra)))
    return out


def _peak(spans):
    """The most weight [start, end) spans hold at one moment."""
    return max(sum(w for s, e, w in spans if s <= at < e) for at, _, _ in spans)


def check_limits_over_time(s, now):
    """Running jobs (until their end-by) and pending jobs with an estimated start (over [estimate, + limit)) never
    hold more of a group than its limit: the estimates shown keep the limits the scheduler enforces."""
    groups: dict = {}
    for job in list(s.view().queue()):
        at = job.start_time if job.state.value == "RUNNING" else job.estimated_start
        if at is None:
            continue
        span = (at, at + job.spec.time_limit)
        if job.array_job_id is not None and "%" in job.spec.array:
            limit = int(job.spec.array.split("%")[1])
            groups.setdefault(("array", job.array_job_id, limit), []).append((*span, 1))
        if job.spec.qos == "capped":
            groups.setdefault(("jobs", job.user, 2), []).append((*span, 1))
            groups.setdefault(("ipus", job.user, 8), []).append((*span, job.spec.ipus))
    for (kind, who, limit), spans in groups.items():
        assert _peak(spans) <= limit, (now, kind, who, sorted(spans))


@FAST
@given(limited_st, st.sampled_from(["backfill", "priority", "fifo", "sjf"]))
def test_estimates_keep_array_and_qos_user_limits(jobs, policy):
    """The old estimates ignored both: every task of 0-3%1 waiting for the same block was given the same start."""
    s = make(policy=policy, qos=QOS)
    cycle = s.cycle

    def checked(now, *masks, **kw):
        effects = cycle(now, *masks, **kw)
        check_limits_over_time(s, now)
        return effects

    s.cycle = checked
    drive(s, limited_workload(jobs))
    assert all(j.state in TERMINAL for j in s.table.jobs.values())


@FAST
@given(limited_st, st.sampled_from(["backfill", "priority", "fifo", "sjf"]))
def test_limited_jobs_start_the_same_with_and_without_estimates(jobs, policy):
    """Limited jobs' reservations are made in walk order even when estimates are off (replay). Static priorities:
    with fair share between two users the order depends on when priorities were last recomputed, which differs
    between the two walks for a reason of its own (cycles skipped without estimates)."""
    runs = []
    for estimates in (True, False):
        s = make(policy=policy, qos=QOS, **STATIC)
        runs.append(drive(s, limited_workload(jobs), estimates=estimates)["start"])
    assert runs[0] == runs[1]


job_st = st.tuples(st.integers(0, 100), st.sampled_from([1, 2, 4, 8, 16]), st.integers(2, 60))


@FAST
@given(st.lists(job_st, min_size=1, max_size=18), job_st)
def test_sjf_keeps_its_promise_to_the_shortest_job(jobs, shortest):
    """The job with the shortest time limit heads sjf's order from its submission on (no job can overtake it): it
    starts no later than the first start it is given. Greedy sjf broke this whenever smaller, longer jobs kept
    taking the IPUs it waited for."""
    t, ipus, _ = shortest
    arrivals = [(a, spec(ipus=n, time_limit=d + 60, workload=sleep(d + 60))) for a, n, d in jobs]
    arrivals.append((t, spec(ipus=ipus, time_limit=1, workload=sleep(1), name="shortest")))
    arrivals.sort(key=lambda a: a[0])
    s = make(policy="sjf")
    out = drive(s, arrivals)
    [top] = [j.id for j in s.table.jobs.values() if j.name == "shortest"]
    if top in out["first_estimate"]:
        assert out["start"][top] <= out["first_estimate"][top] + 1e-9


def test_sjf_does_not_starve_a_large_short_job_behind_smaller_longer_ones():
    """The acceptance tester's trace: BIG (16 IPUs, 60 s limit) waited ~700 s under greedy sjf while 8-IPU jobs
    kept arriving; it starts when A ends, as under backfill."""
    arrivals = [(0, spec(ipus=8, time_limit=100, workload=sleep(100), name="A")),
                (1, spec(ipus=16, time_limit=60, workload=sleep(10), name="BIG"))]
    arrivals += [(2 + i * 50, spec(ipus=8, time_limit=120, workload=sleep(100), name=f"s{i}")) for i in range(12)]
    for policy in ("backfill", "sjf"):
        s = make(pod=POD16, policy=policy)
        out = drive(s, arrivals)
        assert out["start"][2] == 100, policy


def _estimates(s, now):
    return {j.display_id: (j.reason, j.estimated_start) for j in list(s.view().queue()) if j.state.value == "PENDING"}


def test_array_and_qos_user_limits_shape_the_estimates_shown():
    s = make(pod=POD16)
    s.submit(spec(ipus=16, time_limit=100, workload=sleep(100)), 0)
    s.cycle(0)
    s.submit(spec(ipus=1, time_limit=60, array="0-7%2"), 1)
    s.cycle(1)
    got = _estimates(s, 1)
    assert [got[f"2_{t}"][1] for t in range(8)] == [100, 100, 160, 160, 220, 220, 280, 280]

    s = make(pod=POD16, qos={**DEFAULT_QOS, "two": QosSpec(priority=50, max_jobs_per_user=2)})
    s.submit(spec(ipus=16, time_limit=100, workload=sleep(100)), 0)
    s.cycle(0)
    s.submit(spec(ipus=1, time_limit=60, qos="two", array="0-3"), 1)
    s.cycle(1)
    got = _estimates(s, 1)
    assert [got[f"2_{t}"][1] for t in range(4)] == [100, 100, 160, 160]
