"""What every servicer shares: the controller, the scheduler, the one lock that serialises both, the store, and
the address jobs are told to reach the controller at."""

from __future__ import annotations

import gc
import logging
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from vipu.clock import WallClock
from vipu.access import Identity
from vipu.errors import FailedPrecondition, InvalidArgument, Unauthenticated
from vipu.metrics.instruments import Metrics
from vipu.partition.controller import Controller
from vipu.hardware.pod_files import load_pod
from vipu.partition.rules import job_holder, job_of_partition
from vipu.partition.state import KINDS as PARTITION_KINDS
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.job import KINDS as JOB_KINDS
from vipu.scheduler.scheduler import Scheduler
from vipu.jobs.spec import TrainWorkload
from vipu.scheduler.spec import SleepWorkload
from vipu.scheduler.states import JobState
from vipu.server.auth import bearer
from vipu.server.dispatcher import Dispatcher
from vipu.server.fleet import Fleet
from vipu.server.training import Training
from vipu.store import Store

log = logging.getLogger("vipu.recovery")
USER_METADATA = "x-vipu-user"  # who an insecure caller says it is; with --secure the access key decides


class StateLock:
    """The one lock around the controller and the scheduler; holding it is one store transaction. Everything
    committed while it is held is queued as one write when it is released, and the releasing thread goes on only
    once every write queued until then, its own and those it could have seen, is in the store: so an RPC never
    answers with anything that a SIGKILL could take back. Why flush after releasing: the next thread can work
    while this one writes, and the store writes what queued meanwhile in the same commit (group commit)."""

    def __init__(self, store: Store):
        self._lock = threading.Lock()
        self._store = store
        self._batch = None

    def __enter__(self) -> "StateLock":
        self._lock.acquire()
        self._batch = self._store.batch()
        self._batch.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        batch, self._batch = self._batch, None
        try:
            batch.__exit__(*exc)
        finally:
            seen = self._store.enqueued
            self._lock.release()
        self._store.flush(seen)


@dataclass
class Runtime:
    controller: Controller
    scheduler: Scheduler
    store: Store
    api_host: str
    api_port: int
    now: Callable[[], float] = field(default_factory=lambda: WallClock().now)
    lock: StateLock = field(init=False)
    metrics: Metrics = field(default_factory=Metrics)
    dispatcher: Dispatcher = field(init=False)

    fleet: Fleet = field(init=False)
    training: Training = field(init=False)

    def __post_init__(self):
        self.lock = StateLock(self.store)
        self.dispatcher = Dispatcher(self, self.now)
        self.fleet = Fleet(self, "off")
        self.training = Training(self)
        self.metrics.know_machines(self.controller.pod.machines)

    secure: bool = False

    def fail_ipus(self, ipus: list[int], cause: str) -> list:
        """Take IPUs out of service (an operator's FailIpus, or their machine was lost: `cause` says which, for
        the jobs they end): the partitions on them fail, jobs on them end NODE_FAIL (requeued if their spec
        allows) and lose their partitions, and the dispatcher wakes to place what can go elsewhere. Returns the
        partitions that failed."""
        with self.lock:
            now = self.now()
            failed = self.controller.partitions.fail_ipus(ipus)
            self.dispatcher.apply(self.scheduler.fail_ipus(ipus, now, cause), now)
        self.dispatcher.wake()
        return failed

    def fail_link(self, a: int, b: int) -> list:
        """Fail the IPU-Link between IPUs a and b (an operator's FailLink): both IPUs are failed (see fail_ipus),
        the machine actors at its ends, if any, refuse traffic over it, and each end's machine counts a link error
        (with or without actors). Returns the partitions that failed."""
        topology = self.controller.state.topology
        topology.require_link(a, b)
        failed = self.fail_ipus([a, b], f"the IPU-Link between IPUs {a} and {b} failed")
        self.fleet.fail_link(a, b)
        for machine in sorted({a // topology.ipus_per_machine, b // topology.ipus_per_machine}):
            self.metrics.link_errors.labels(str(machine), "ipu_link").inc()
        return failed

    def remove_partition(self, name: str, force: bool):
        """Remove a partition. A running job's (slurm_<n>) goes only with force, and then as `vipu cancel n`: the
        job ends CANCELLED with it, since a job counted as running on IPUs that are free again would see them
        handed out twice. Returns the removed partition and the job cancelled with it, as squeue names it (None
        if none was), so the caller is told."""
        with self.lock:
            job_id = self._running_job_of(name)
            if job_id is None:
                return self.controller.partitions.remove(name, force), None
            shown = self.scheduler.table.jobs[job_id].display_id  # 26_0 for an array's first task: 26 is every task
            if not force:
                raise FailedPrecondition(
                    f"partition {name} belongs to running job {shown}; `vipu cancel {shown}` ends the job and removes"
                    " it (remove with --force cancels the job too)"
                )
            now = self.now()
            stops = self.scheduler.cancel([job_id], now, single=True,
                                          why=f"its partition {name} was removed (vipu remove partition --force)")
            removed = self.controller.partitions.remove(name, force=True)
            self.dispatcher.apply(stops, now)  # its own removal finds the partition gone
        self.dispatcher.wake()
        return removed, shown

    def reset_partition(self, name: str):
        with self.lock:
            job_id = self._running_job_of(name)
            if job_id is not None:
                shown = self.scheduler.table.jobs[job_id].display_id
                raise FailedPrecondition(
                    f"partition {name} belongs to running job {shown}, and a reset would stop its workload;"
                    f" `vipu requeue {shown}` or `vipu cancel {shown}` ends the run instead"
                )
            return self.controller.partitions.reset(name)

    def _running_job_of(self, name: str) -> int | None:
        """The running job that holds this partition, if it is one's."""
        job_id = job_of_partition(name)
        if job_id is None or job_id not in self.scheduler.table.running:
            return None
        partition = self.controller.state.partitions.get(name)
        return job_id if partition is not None and partition.holder == job_holder(job_id) else None

    def user_for_key(self, key: str):
        with self.lock:
            return self.controller.admin.user_for_key(key)

    def identity(self, context) -> Identity:
        """Who is calling: the owner of the access key with --secure (the interceptor has checked it), else
        whoever the caller says it is, trusted with everything."""
        metadata = context.invocation_metadata() or ()
        if self.secure:
            user = self.user_for_key(bearer(metadata) or "")
            if user is None:
                raise Unauthenticated("no valid access key; pass --api-access-key")
            return Identity(user.name, user.admin)
        claimed = next((value for key, value in metadata if key == USER_METADATA), "")
        return Identity(claimed, admin=True)


def open_runtime(
    pod_name: str, state_dir: Path, api_host: str, api_port: int, config: SchedulerConfig | None = None
) -> Runtime:
    """Open (or create) the state folder for `pod_name` and rebuild the controller and the queue from it.

    Jobs that were running when the last process died keep running if their partition survived and their workload
    can resume (sleep workloads resume against their original start time, so they end when they would have; hold
    workloads just go on); the others, training runs included, end NODE_FAIL and are requeued under the same id if
    their spec allows (see vipu/scheduler/recovery.py). Each says which in its recovery note."""
    pod = load_pod(pod_name)
    path = Path(state_dir) / "vipu.sqlite3"
    try:
        store = Store(path)
        stored = store.get_meta("pod")
    except sqlite3.DatabaseError as e:
        raise InvalidArgument(
            f"the state database {path} cannot be read ({e}); move it away to start afresh, or give another --state-dir"
        ) from None
    if stored is None:
        store.set_meta("pod", pod.model_dump(mode="json"))
    elif stored != pod.model_dump(mode="json"):
        store.close()
        raise InvalidArgument(
            f"state folder {state_dir} belongs to pod {stored.get('name')!r} with a different configuration than"
            f" --pod {pod_name}; start with that pod, or give a new --state-dir"
        )
    clock = WallClock()
    with _cycle_collection_paused():  # every stored record becomes objects that last, in no cycle
        records = store.load({**PARTITION_KINDS, **JOB_KINDS})
        controller = Controller(pod, store, clock.now, [(k, r) for k, r in records if k in PARTITION_KINDS])
        scheduler = Scheduler(pod, config or SchedulerConfig(), store)
        runtime = Runtime(controller, scheduler, store, api_host, api_port, clock.now)
        with runtime.lock:
            _recover(runtime, [(k, r) for k, r in records if k in JOB_KINDS])
    return runtime


@contextmanager
def _cycle_collection_paused():
    """Python's cycle collector off for a block that makes many lasting objects and no cycles. Why: it runs every
    700 new objects and, as they survive, rescans all of them, which was most of a restart over tens of thousands of
    stored jobs (bench/bench_recovery.py --jobs 28000)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _recover(runtime: Runtime, job_records) -> None:
    scheduler, controller = runtime.scheduler, runtime.controller
    now = runtime.now()
    # a training run lives in this process, so it died with the last one; sleep and hold workloads are timers
    effects = scheduler.recover(job_records, now, list(controller.state.partitions),
                                resumable=lambda job: not isinstance(job.spec.workload, TrainWorkload))
    runtime.dispatcher.apply(effects, now)
    failed = sorted(controller.state.failed_ipus)
    runtime.dispatcher.apply(scheduler.fail_ipus(failed, now, "out of service when the controller restarted"), now)
    for job in scheduler.table.jobs.values():
        if job.state is JobState.RUNNING and isinstance(job.spec.workload, SleepWorkload):
            runtime.dispatcher.watch(job.id, job.start_time, job.spec.workload)
    ran = sorted(r.id for k, r in job_records if k == "job" and r.state in (JobState.RUNNING, JobState.COMPLETING))
    for job_id in ran:
        job = scheduler.table.jobs[job_id]
        if job.recovery:  # (a COMPLETING job whose partition survived has none)
            log.info("job %s: %s", job.display_id, job.recovery)
