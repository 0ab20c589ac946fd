"""Builders and fakes for the scheduler tests: a recording Journal, specs, schedulers and a virtual-time driver,
each one line to use (`make(policy="fifo")`, `spec(ipus=4, array="0-3")`)."""

from __future__ import annotations

from vipu.control.driver import Arrival, Driver, Timers
from vipu.hardware.pod_files import load_pod
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import JobState
from vipu.scheduler.policies.reservations import blocks_mask


class RecordingJournal:
    """Captures every commit; `fail_next` makes the next commit raise, as a full disk would."""

    def __init__(self):
        self.commits: list[tuple[list, list]] = []
        self.fail_next = False

    def commit(self, puts, deletes) -> None:
        if self.fail_next:
            self.fail_next = False
            raise OSError("disk full")
        self.commits.append((list(puts), list(deletes)))

    @property
    def records(self) -> dict[tuple[str, str], object]:
        """The store as it would be after replaying every commit."""
        out: dict[tuple[str, str], object] = {}
        for puts, deletes in self.commits:
            for kind, name, record in puts:
                out[kind, name] = record
            for kind, name in deletes:
                out.pop((kind, name), None)
        return out

    def kinds(self) -> set[str]:
        return {kind for puts, _ in self.commits for kind, _, _ in puts}


def spec(**fields) -> dict:
    """A job spec with small defaults: 1 IPU, 60 s limit, sleeping 10 s."""
    base = {"ipus": 1, "time_limit": 60, "workload": {"kind": "sleep", "duration": 10}}
    base.update(fields)
    return base


def sleep(seconds: float, exit_code: int = 0) -> dict:
    return {"kind": "sleep", "duration": seconds, "exit_code": exit_code}


POD16 = load_pod("bow-pod16")
POD64 = load_pod("bow-pod64")
POD256 = load_pod("bow-pod256")


def make(pod=POD16, journal=None, **config) -> Scheduler:
    """A scheduler on `pod` with config overrides, e.g. make(policy="fifo", max_job_test=5)."""
    return Scheduler(pod, SchedulerConfig(**config), journal)


def drive(s: Scheduler, arrivals: list[tuple[float, dict]], until: float = 1e12, estimates: bool = True) -> dict:
    """The controller's driver in virtual time: submit `arrivals` (time, spec), end sleep workloads when they end,
    enforce time limits, wake at begin times.

    Returns {"first_estimate": {id: t}, "start": {id: t}, "end": {id: t}}; checks after every step that running
    jobs hold disjoint, aligned, whole blocks (the gang invariant)."""
    out: dict = {"first_estimate": {}, "start": {}, "end": {}}

    class Recorder(Timers):
        def start(self, start):
            out["start"].setdefault(start.job_id, start.start_time)
            return super().start(start)

        def stop(self, stop):
            if stop.state in (JobState.COMPLETED, JobState.FAILED, JobState.TIMEOUT):
                out["end"][stop.job_id] = s.table.jobs[stop.job_id].end_time
            super().stop(stop)

    driver = Driver(s, Recorder(), estimates=estimates)
    driver.arrive(Arrival(at, parse_spec(fields)) for at, fields in arrivals)

    def after(now: float) -> None:
        for job_id, info in s.pending_info.items():
            if info.estimated_start is not None:
                out["first_estimate"].setdefault(job_id, info.estimated_start)
        check_gangs(s)

    driver.run(until, after)
    return out


def check_gangs(s: Scheduler) -> None:
    used = 0
    for r in s.table.running.values():
        assert r.first_ipu % r.ipus == 0, f"job {r.id} block not aligned"
        blk = ((1 << r.ipus) - 1) << r.first_ipu
        assert not used & blk, f"job {r.id} overlaps another job"
        used |= blk
    assert used == s.table.used_mask
    ending: dict[float, set] = {}  # the release groups the table keeps for the timeline, worked out afresh
    for r in s.table.running.values():
        ending.setdefault(r.end_by, set()).add((r.first_ipu, r.ipus))
    kept = s.table.release_groups(s.total)
    assert {at: set(zip(blocks[::2], blocks[1::2])) for at, (blocks, _) in kept.items()} == ending
    assert all(mask == blocks_mask(blocks, s.total) for blocks, mask in kept.values())
