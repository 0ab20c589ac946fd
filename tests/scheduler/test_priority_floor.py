"""A multifactor priority below 1 (a large nice) is 1, as Slurm's priority/multifactor makes it ("Priority 0 is
reserved for held jobs"): shown so (sprio, squeue %Q) and ordered so, jobs at 1 in submit order behind the rest."""

from vipu.scheduler.updates import JobUpdate

from tests.scheduler.builders import make, spec

FAIR_SHARE_ONLY = {"weights": {"age": 0, "fairshare": 1000, "job_size": 0, "qos": 0}}  # priority = 1000 - nice


def queued(s, now):
    return [(j.id, j.priority.total) for j in s.view().queue(now=now) if j.state.value == "PENDING"]


def test_a_priority_under_one_is_one_and_waits_in_submit_order():
    s = make(**FAIR_SHARE_ONLY)
    s.submit(spec(ipus=16, user="cy"), 0)  # the whole Pod: everything after it waits
    s.cycle(0)
    for t, (user, nice) in enumerate([("ann", 5000), ("bob", 999), ("ann", 1500), ("bob", 0), ("ann", 998)], 1):
        s.submit(spec(user=user, nice=nice), t)
    s.cycle(10)
    # 1000 - nice: 1000 and 2 first, then -4000, 1 and -500 as 1 each, by submit time
    assert queued(s, 10) == [(5, 1000.0), (6, 2.0), (2, 1.0), (3, 1.0), (4, 1.0)]
    assert [(r.job_id, r.total) for r in s.view().priorities(10)] == queued(s, 10)


def test_one_users_jobs_under_one_wait_in_submit_order_too():
    """One user's jobs are one sorted list (order.py): the floor holds there as in the merge of several."""
    s = make(**FAIR_SHARE_ONLY)
    s.submit(spec(ipus=16, user="cy"), 0)  # another user's: ann's fair-share stays 1
    s.cycle(0)
    for t, nice in enumerate([3000, 2000, 10, 1000], 1):
        s.submit(spec(nice=nice), t)
    s.cycle(10)
    assert queued(s, 10) == [(4, 990.0), (2, 1.0), (3, 1.0), (5, 1.0)]


def test_a_fixed_priority_of_one_ties_with_the_floor_by_submit_time():
    s = make(**FAIR_SHARE_ONLY)
    s.submit(spec(ipus=16, user="cy"), 0)
    s.cycle(0)
    s.submit(spec(nice=5000), 1)
    s.submit(spec(nice=0), 2)
    s.update(3, JobUpdate(priority=1), 3, admin=True)
    s.cycle(10)
    assert queued(s, 10) == [(2, 1.0), (3, 1.0)]
