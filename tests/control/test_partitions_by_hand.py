"""Partitions made by hand (F4 of walk 44), in process (Pod16: ag00 to ag03): under --secure a user makes one only in
an allocation granted to them by name (`default`, granted to no one, serves jobs and admins); a job waiting for IPUs
that such partitions hold shows slurmctld's reason for nodes a reservation holds, not Resources, since no job's end
will free them."""

from __future__ import annotations

import pytest

from vipu.access import ANYONE, Identity
from vipu.control.job_ops import SubmitRequest
from vipu.control.job_views import RESERVED
from vipu.errors import PermissionDenied
from vipu.partition.partition_record import PartitionRequest

BOB, CAROL, ADMIN = Identity("bob", admin=False), Identity("carol", admin=False), Identity("root", admin=True)


def submit(plane, identity=ANYONE, **fields) -> int:
    spec = {"ipus": 4, "time_limit": "10m", "workload": {"kind": "sleep", "duration": "5m"}, **fields}
    [done] = plane.jobs.submit([SubmitRequest(spec, {})], identity)
    return done.jobs[0].id


def make(plane, name: str, size: int, identity=ANYONE, allocation: str | None = None):
    return plane.partitions.create(PartitionRequest(name=name, size=size, allocation=allocation), identity)


def test_a_user_needs_an_allocation_granted_by_name_and_jobs_need_none(plane):
    for user in ("bob", "carol"):
        plane.admin.create_user(user, False)
    with pytest.raises(PermissionDenied) as refused:
        make(plane, "hog", 16, BOB)
    assert refused.value.reason == "ALLOCATION_NOT_GRANTED" and refused.value.message.startswith(
        "allocation default is granted to no user, so under --secure it serves jobs and admins only")
    assert "`vipu-admin create allocation NAME --agents AGENTS --users bob`" in refused.value.message
    plane.admin.create_allocation("open", ["ag03"], [])
    with pytest.raises(PermissionDenied) as refused:
        make(plane, "p", 4, BOB, "open")
    assert "`vipu-admin remove allocation open` then `vipu-admin create allocation open --agents ag03 --users bob`" \
        in refused.value.message
    plane.admin.create_allocation("bobs", ["ag02"], ["bob"])
    assert make(plane, "mine", 4, BOB, "bobs").owner == "bob"
    with pytest.raises(PermissionDenied, match="allocation bobs is granted to bob, not carol"):
        make(plane, "hers", 4, CAROL, "bobs")
    assert make(plane, "admins", 4, ADMIN).allocation == "default"
    assert make(plane, "anyones", 2, ANYONE, "open").allocation == "open"  # without --secure: as before

    jobs = [submit(plane, CAROL, ipus=2), submit(plane, CAROL, ipus=2, allocation="open")]  # unaffected
    plane.step()
    assert [plane.job_views.job(j, CAROL).state.value for j in jobs] == ["RUNNING", "RUNNING"]
    assert {p.name for p in plane.read().pod.partitions.values()} >= {f"slurm_{j}" for j in jobs}


def test_a_job_waiting_on_partitions_made_by_hand_says_its_nodes_may_be_reserved(plane):
    make(plane, "hog", 8)  # half the Pod: a job of 16 waits for it, not for any job
    busy = submit(plane, ipus=8)
    plane.step()
    big, small = submit(plane, ipus=16), submit(plane, ipus=4)
    plane.step()
    assert plane.job_views.job(busy, ANYONE).state.value == "RUNNING"
    assert plane.job_views.job(big, ANYONE).reason == RESERVED == "ReqNodeNotAvail, May be reserved for other job"
    assert plane.job_views.job(small, ANYONE).reason != RESERVED  # the running job's end frees room for it
    listed = {j.id: j.reason for j in plane.job_views.queue(ANYONE).items}
    assert listed[big] == RESERVED
    plane.partitions.remove("hog", False, ANYONE)
    plane.step()
    assert plane.job_views.job(big, ANYONE).reason == "Resources"  # now the running job holds what it needs


def test_partitions_by_hand_of_another_allocation_leave_a_jobs_reason_alone(plane):
    plane.admin.create_allocation("a1", ["ag00", "ag01"], [])
    make(plane, "hog", 8, allocation="a1")  # the whole of a1
    busy = submit(plane, ipus=8)  # the whole of default
    plane.step()
    waiting = submit(plane, ipus=8)
    plane.step()
    assert plane.job_views.job(busy, ANYONE).state.value == "RUNNING"
    assert plane.job_views.job(waiting, ANYONE).reason == "Resources"
