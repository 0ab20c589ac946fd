"""Builders and fakes for the scheduler tests: a recording Journal, specs, schedulers and a virtual-time driver,
each one line to use (`make(policy="fifo")`, `spec(ipus=4, array="0-3")`)."""

from __future__ import annotations

from vipu.hardware.pod_files import load_pod
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.scheduler import Scheduler


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
    """A small virtual-time loop: submit `arrivals` (time, spec), finish sleep workloads when they end, and wake
    at begin times.

    Returns {"first_estimate": {id: t}, "start": {id: t}, "end": {id: t}}; checks at every step that running jobs
    hold disjoint, aligned, whole blocks (the gang invariant)."""
    import heapq

    from vipu.scheduler.effects import StartJob

    arrivals = sorted(arrivals, key=lambda a: a[0])
    heap: list = []
    seq = 0
    out: dict = {"first_estimate": {}, "start": {}, "end": {}}
    i = 0
    while i < len(arrivals) or heap or s.table.begins:
        begin = s.table.next_begin()  # wake when a job's begin time comes, as the live dispatcher does
        now = min(arrivals[i][0] if i < len(arrivals) else float("inf"), heap[0][0] if heap else float("inf"),
                  float("inf") if begin is None else begin)
        if now > until:
            break
        while i < len(arrivals) and arrivals[i][0] == now:
            s.submit(arrivals[i][1], now)
            i += 1
        while heap and heap[0][0] == now:
            _, _, job_id, started, code = heapq.heappop(heap)
            job = s.table.jobs[job_id]
            if job.state.value == "RUNNING" and job.start_time == started:
                s.job_finished(job_id, now, exit_code=code)
                out["end"][job_id] = now
        for e in s.enforce_time_limits(now):
            out["end"][e.job_id] = now
        for e in s.cycle(now, estimates=estimates):
            if isinstance(e, StartJob):
                out["start"].setdefault(e.job_id, now)
                work = e.workload
                if work.kind == "sleep":
                    at = e.start_time + work.duration
                    if at <= e.end_by:
                        heapq.heappush(heap, (at, seq, e.job_id, e.start_time, work.exit_code))
                        seq += 1
                if e.end_by < float("inf"):
                    heapq.heappush(heap, (e.end_by, seq, e.job_id, -1.0, 0))  # wakes the loop for the time limit
                    seq += 1
        for job_id, info in s.pending_info.items():
            if info.estimated_start is not None:
                out["first_estimate"].setdefault(job_id, info.estimated_start)
        check_gangs(s)
    return out


def check_gangs(s: Scheduler) -> None:
    used = 0
    for r in s.table.running.values():
        assert r.first_ipu % r.ipus == 0, f"job {r.id} block not aligned"
        blk = ((1 << r.ipus) - 1) << r.first_ipu
        assert not used & blk, f"job {r.id} overlaps another job"
        used |= blk
    assert used == s.table.used_mask
