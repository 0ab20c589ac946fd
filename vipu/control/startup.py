"""Opening a state folder: the store, the Pod it belongs to, and the controller and queue rebuilt from its records.

Jobs that were running when the last process died keep running if their partition survived and their workload kind
can resume (sleep and hold: their timers resume against the original start, so they end when they would have);
the others, training runs included, end NODE_FAIL and are requeued under the same id if their spec allows
(vipu/scheduler/recovery.py). Each says which in its recovery note.
"""

from __future__ import annotations

import gc
import logging
import sqlite3
from contextlib import contextmanager
from pathlib import Path

from vipu.clock import WallClock
from vipu.control.creations import KINDS as CREATION_KINDS, Creations
from vipu.control.plane import ControlPlane
from vipu.control.workloads import RunSettings, WorkloadKind, builtin_kinds
from vipu.errors import InvalidArgument
from vipu.partition.controller import Controller
from vipu.hardware.pod_files import load_pod
from vipu.partition.pod_state import KINDS as PARTITION_KINDS
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.job_record import KINDS as JOB_KINDS
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.job_states import JobState
from vipu.store import Store

log = logging.getLogger("vipu.recovery")


def open_plane(pod_name: str, state_dir: Path, api_host: str, api_port: int, config: SchedulerConfig | None = None,
               kinds: dict[str, WorkloadKind] | None = None, kill_wait_s: float = 30.0,
               modelled_time_scale: float = 1.0) -> ControlPlane:
    """Open (or create) the state folder for `pod_name` and rebuild the controller and the queue from it."""
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
    kinds = kinds if kinds is not None else builtin_kinds()  # before the records: their specs name the kinds
    clock = WallClock()
    with _cycle_collection_paused():  # every stored record becomes objects that last, in no cycle
        records = store.load({**PARTITION_KINDS, **JOB_KINDS, **CREATION_KINDS})
        controller = Controller(pod, store, clock.now, [(k, r) for k, r in records if k in PARTITION_KINDS])
        scheduler = Scheduler(pod, config or SchedulerConfig(), store)
        settings = RunSettings(kill_wait_s=kill_wait_s, state_dir=Path(state_dir),
                               modelled_time_scale=modelled_time_scale)
        creations = Creations(store, [r for k, r in records if k in CREATION_KINDS])
        plane = ControlPlane(controller, scheduler, store, clock.now, api_host, api_port, kinds, settings, creations)
        with plane.lock:
            _recover(plane, [(k, r) for k, r in records if k in JOB_KINDS])
    return plane


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


def _recover(plane: ControlPlane, job_records) -> None:
    scheduler, controller, driver = plane.scheduler, plane.controller, plane.driver
    now = plane.now()

    def resumable(job) -> bool:
        kind = plane.kinds.get(job.spec.workload.kind)
        return kind is not None and kind.resumable

    effects = scheduler.recover(job_records, now, list(controller.state.partitions), resumable=resumable)
    driver.apply(effects, now)
    failed = sorted(controller.state.failed_ipus)
    driver.apply(scheduler.fail_ipus(failed, now, "out of service when the controller restarted"), now)
    driver.watch(lambda job: job.spec.workload.ending(job.start_time))  # resumed runs: their ends, time limits
    ran = sorted(r.id for k, r in job_records if k == "job" and r.state in (JobState.RUNNING, JobState.COMPLETING))
    for job_id in ran:
        job = scheduler.table.jobs[job_id]
        if job.recovery:  # (a COMPLETING job whose partition survived has none)
            log.info("job %s: %s", job.display_id, job.recovery)
