"""The scheduler on a Bow Pod1024 and on the largest Pod Graphcore names (65,536 IPUs): whole-Pod jobs, buddy
placement, reservations and backfill across Pod64 racks, the queue and its reasons, sizes past the Pod refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scheduler.builders import check_gangs, drive, make, sleep, spec
from vipu.errors import InvalidArgument
from vipu.hardware.pod_files import load_pod
from vipu.scheduler.policies.base import PRIORITY, RESOURCES

POD1024 = load_pod("bow-pod1024")
POD65536 = load_pod(str(Path(__file__).resolve().parents[2] / "examples/pods/pod65536.yaml"))


@pytest.mark.parametrize("pod", [POD1024, POD65536], ids=["pod1024", "pod65536"])
def test_a_whole_pod_job_waits_for_the_small_ones_then_takes_every_ipu(pod):
    s = make(pod, policy="backfill")
    small = [s.submit(spec(ipus=64, time_limit=600, workload=sleep(300)), 0.0)[0].id for _ in range(3)]
    s.cycle(0.0)
    whole = s.submit(spec(ipus=pod.ipus, time_limit=600, workload=sleep(60)), 0.0)[0].id
    s.cycle(0.0)
    assert sorted(r.first_ipu for r in s.table.running.values()) == [0, 64, 128]
    assert s.pending_info[whole].reason == RESOURCES and s.pending_info[whole].estimated_start == 600.0
    for job in small:
        s.job_finished(job, 300.0)
    s.cycle(300.0)
    assert [(r.id, r.first_ipu, r.ipus) for r in s.table.running.values()] == [(whole, 0, pod.ipus)]
    check_gangs(s)


@pytest.mark.parametrize("pod", [POD1024, POD65536], ids=["pod1024", "pod65536"])
def test_a_job_larger_than_the_pod_is_refused_naming_the_largest_partition(pod):
    with pytest.raises(InvalidArgument, match=f"ipus is {pod.ipus * 2} but {pod.name} has {pod.ipus} IPUs; the"
                                              f" largest partition is {pod.ipus}"):
        make(pod).submit(spec(ipus=pod.ipus * 2, time_limit=60), 0.0)


def test_buddy_placement_on_the_largest_pod_keeps_large_holes_whole():
    """Jobs of 1, 64 and 1,024 IPUs, then one of half the Pod: each takes the smallest hole that fits, so the half
    that stays wholly free holds the large job."""
    s = make(POD65536, policy="fifo")
    for ipus in (1, 64, 1024, 1, 32_768):
        s.submit(spec(ipus=ipus, time_limit=600), 0.0)
    s.cycle(0.0)
    assert [(r.ipus, r.first_ipu) for r in sorted(s.table.running.values(), key=lambda r: r.id)] == [
        (1, 0), (64, 64), (1024, 1024), (1, 1), (32_768, 32_768)]
    check_gangs(s)


def test_backfill_on_a_pod1024_fills_the_racks_without_delaying_the_reserved_job():
    """A 512-IPU job waits behind 16 jobs of 64 (a rack each); shorter jobs backfill only where they end before it
    starts; virtual time, driven as the controller does."""
    arrivals = [(0.0, spec(name=f"rack{i}", ipus=64, time_limit=3600, workload=sleep(3600))) for i in range(16)]
    arrivals += [(1.0, spec(name="big", ipus=512, time_limit=600, workload=sleep(600)))]
    arrivals += [(2.0, spec(name=f"short{i}", ipus=16, time_limit=600, workload=sleep(600))) for i in range(8)]
    s = make(POD1024, policy="backfill")
    times = drive(s, arrivals)
    big = next(j.id for j in s.table.jobs.values() if j.name == "big")
    assert times["start"][big] == 3600.0 == times["first_estimate"][big]
    shorts = [j.id for j in s.table.jobs.values() if j.name.startswith("short")]
    assert all(times["start"][job] == 3600.0 for job in shorts)  # 512 IPUs stay for them beside the big job


def test_the_queue_of_a_pod1024_lists_thousands_of_jobs_in_order_with_their_reasons():
    s = make(POD1024, policy="backfill")
    ids = [s.submit(spec(ipus=ipus, time_limit=600, user=f"u{n % 7}"), 0.0)[0].id
           for n, ipus in enumerate([64, 128, 256, 512, 1024] * 600)]
    s.cycle(0.0)
    running = {r.id for r in s.table.running.values()}
    queue = list(s.view().queue())
    assert len(queue) == len(ids) and {row.id for row in queue} == set(ids)
    reasons = {s.pending_info[i].reason for i in ids if i not in running and i in s.pending_info}
    assert reasons <= {RESOURCES, PRIORITY} and PRIORITY in reasons
    assert sum(r.ipus for r in s.table.running.values()) <= POD1024.ipus
    check_gangs(s)
