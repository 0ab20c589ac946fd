"""The control plane: the one object the edges (gRPC servicers, metrics, the server's start-up) call.

It owns the scheduler, the partition controller, the store, the clock, the lock, the machines and the driver, and
offers operations that return domain objects: `jobs` (Slurm's commands), `job_views` (its views), `partitions`
(V-IPU's), `admin` (agents, clusters, allocations, users, faults), and `read()`, a snapshot every read runs on
without the lock. Writes take the lock, which is one store transaction (lock.py); after a change that may let a job
start, the loop is woken.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Iterable, NamedTuple

from vipu.access import Identity
from vipu.clock import WallClock
from vipu.control.admin_ops import AdminOps
from vipu.control.callers import asked_by
from vipu.control.creations import Creations
from vipu.control.device_ops import DeviceOps
from vipu.control.driver import Driver
from vipu.control.ended_jobs import stored_job
from vipu.control.executor import LiveExecutor
from vipu.control.output_files import OutputFiles
from vipu.control.job_ops import JobOps
from vipu.control.job_views import JobViews
from vipu.control.lock import Recording, StateLock, Undone
from vipu.control.pacing import Pacing
from vipu.control.partition_ops import PartitionOps
from vipu.control.realtime import RealtimeLoop
from vipu.control.run_ends import RunEnd, RunEnds
from vipu.control.snapshot import Listings, Page, Snapshot
from vipu.control.workloads import RunContext, RunSettings, WorkloadKind, builtin_kinds
from vipu.control.accounts import uid_of, unix_account
from vipu.errors import Unauthenticated
from vipu.control.instruments import Metrics
from vipu.jobs.sessions.tokens import Sessions
from vipu.partition.admin_records import Reason
from vipu.partition.controller import Controller
from vipu.partition.rules import job_of_partition, job_partition_name
from vipu.scheduler.policies.policy_file import GuardedPolicy
from vipu.scheduler.scheduler import Scheduler
from vipu.scheduler.stopped_ends import program_ended
from vipu.store import Store
from vipu.workers.fleet import Fleet

log = logging.getLogger("vipu.store")


def _on_wall_clock(scheduler: Scheduler) -> None:
    """The times a --policy-file's failure lines give are the wall clock's: shown as ISO times, not epoch seconds
    (a replay's stay virtual seconds)."""
    if isinstance(scheduler.policy, GuardedPolicy):
        scheduler.policy.shown = WallClock.shown


class StoreWrites(NamedTuple):
    writable: bool
    failures: int


class ControlPlane:
    def __init__(self, controller: Controller, scheduler: Scheduler, store: Store, now: Callable[[], float],
                 api_host: str, api_port: int, kinds: dict[str, WorkloadKind] | None = None,
                 settings: RunSettings = RunSettings(), creations: Creations | None = None):
        self.controller = controller
        self.scheduler = scheduler
        scheduler.table.nodes.use(controller.state.node_names())  # before any job is read (sbatch -w names)
        _on_wall_clock(scheduler)
        self.store = store
        self.creations = creations if creations is not None else Creations(store)  # create calls' request ids
        self.now = now
        self.pod = controller.pod
        self.topology = controller.state.topology  # the IPU-Link torus: fixed for the Pod
        self.api_host, self.api_port = api_host, api_port  # where jobs reach the controller (IPUOF_VIPU_API_*)
        self.secure = False
        self.state_id = ""  # the id of the state the store holds (startup.open_plane)
        self.device_address: str | None = None  # host:port of the DeviceService, once it listens (None: off)
        self.device_cert: str | None = None  # its TLS certificate chain (PEM), which programs then trust
        self.served: dict[str, object] = {}  # vipu-server's flags no part here holds (running_config.py)
        self.unrecovered: list | None = None  # job records loaded, the queue not yet rebuilt from them (startup.py)
        self.sessions = Sessions()
        self.lock = StateLock(store)
        self.metrics = Metrics()
        self.metrics.know_machines(self.pod.machines, self.pod.ipus)
        self.machines = Fleet(self.pod, on_lost=self._machines_lost, mode="off")
        self.kinds = kinds if kinds is not None else builtin_kinds()
        self.settings = settings
        context = RunContext(
            pod=self.pod, store=store, lock=Recording(self.lock), machines=self.machines, now=now,
            job=lambda i: self.scheduler.table.jobs.get(i) or stored_job(store, i),
            still_running=lambda i, t: self.scheduler.table.running_since(i, t) is not None,
            finish=self._finish, stopped_end=self._stopped_end, wake=self.changed, release=self._release, pod_state=lambda: self.controller.state,
            failed_mask=lambda: self.scheduler.failed_mask, api_address=lambda: (self.api_host, self.api_port),
            run_as=lambda user: self.run_as(user, self.controller.state), sessions=self.sessions,
            device_environment=self.device_environment, settings=settings)
        self.runners = {name: kind.runner(context) for name, kind in self.kinds.items() if kind.runner is not None}
        outputs = OutputFiles(settings.state_dir, settings.output_dirs)
        self.executor = LiveExecutor(scheduler, controller, self.machines, self.kinds, self.runners, self.metrics,
                                     outputs)
        self.driver = Driver(scheduler, self.executor, masks=self._masks)
        self.ends = RunEnds()  # runs' ends until the store has written them (run_ends.py)
        self.undone_in = -1  # the store outage whose rollback was logged (rollback.py: once an outage)
        self.loop = RealtimeLoop(self.driver, self.lock, now, self.metrics, self._forget, lambda: store.writable,
                                 self.record_held_ends)
        store.on_dropped = self._roll_back
        self.pacing = Pacing(lambda: self.lock.last_write)
        self.listings = Listings(self.pacing.paced)
        self._snapshot: Snapshot | None = None
        self._taking = threading.Lock()  # one reader takes a new snapshot; the others wait and share it
        self.jobs = JobOps(self)
        self.job_views = JobViews(self)
        self.partitions = PartitionOps(self)
        self.admin = AdminOps(self)
        self.devices = DeviceOps(self.sessions)

    def watch_store(self, on_health: Callable[[bool], None]) -> None:
        """Hear when the store cannot write any more (True again once it can): health follows it."""
        def heard(writable: bool) -> None:
            if writable and self.undone_in == self.store.outages:
                log.warning("the state store %s writes again", self.store.path)
            on_health(writable)
            if writable:
                self.changed()  # the loop records the ends that waited for the store, with their real times

        self.store.on_health = heard

    def _masks(self):
        return self.controller.state.job_masks()

    def _roll_back(self) -> None:
        """Writes the store dropped are undone: the state rebuilt from what it holds (rollback.py)."""
        from vipu.control.rollback import roll_back  # it builds the state as the start does (startup.py)

        roll_back(self)

    def use(self, controller: Controller, scheduler: Scheduler, creations: Creations) -> None:
        """Serve a state rebuilt from the store (rollback.py): every part that holds the state moves to it."""
        self.controller, self.scheduler, self.creations = controller, scheduler, creations
        scheduler.table.nodes.use(controller.state.node_names())
        _on_wall_clock(scheduler)
        self.executor.scheduler, self.executor.controller = scheduler, controller
        self.driver = self.loop.driver = Driver(scheduler, self.executor, masks=self._masks)
        self._snapshot = None

    def store_writes(self) -> StoreWrites:
        """Whether the store writes now, and how many writes failed since the start (metrics, /healthz)."""
        return StoreWrites(self.store.writable, self.store.write_failures)

    # -- reads ------------------------------------------------------------------------------------------------

    def read(self) -> Snapshot:
        """The state now, for reads: the last snapshot if nothing changed since, else a new one."""
        snapshot = self._snapshot
        if snapshot is not None and snapshot.version == self.lock.version:
            return snapshot
        with self._taking:
            snapshot = self._snapshot
            if snapshot is not None and snapshot.version == self.lock.version:
                return snapshot
            while True:
                try:
                    with self.lock.reading() as version:
                        state = self.controller.state
                        available, allowed = state.job_masks()
                        snapshot = Snapshot(version, self.scheduler.view(), state.read_copy(), available, allowed)
                    break
                except Undone:  # the store could not write what it saw: the next copy is of the state rebuilt
                    continue
            self._snapshot = snapshot
        return snapshot

    def paced(self, items):
        """`items` taken a few at a time while writes are coming in, so a long read does not slow them (pacing.py)."""
        return self.pacing.paced(items)

    def page(self, key: str, make: Callable[[Snapshot], Iterable], page_size: int, page_token: str,
             snapshot: Snapshot | None = None, present: Callable = lambda row: row, fresh: bool = False) -> Page:
        """One page of the listing `make(snapshot)`, named by `key` (its filters and the caller), each row shown as
        present(row); snapshot.py."""
        return self.listings.page(self.read, key, make, page_size, page_token, snapshot, present, fresh)

    def identity(self, key: str | None, claimed: str) -> Identity:
        """Who is calling: the owner of the access key `key` with --secure (the edge has checked it), else whoever
        the caller says it is (`claimed`), trusted with everything."""
        if self.secure:
            user = self.user_for_key(key or "")
            if user is None:
                raise Unauthenticated("no valid access key; pass one (authorization: Bearer KEY; the CLI's"
                                      " --api-access-key)", reason="ACCESS_KEY_UNKNOWN")
            return Identity(user.name, user.admin)
        return Identity(claimed, admin=True)

    def run_as(self, user: str, state) -> dict | None:
        """The Unix account a vipu user's programs run as ({uid, gid, groups}), or None for the controller's own
        (without --secure: one person on a laptop). Raises PermissionDenied, saying how to allow them, when that
        user's programs may not run. `state`: the Pod's users as the caller holds them (live or a snapshot)."""
        if not self.secure:
            return None
        record = state.users.get(user)
        return unix_account(user, record.unix_user if record is not None else None)

    def uid(self, user: str) -> int | None:
        """The uid a vipu user's request is recorded under (sacct's "CANCELLED by UID", slurmctld's requid): under
        --secure their mapped Unix account's (none unmapped); without it, the account of their name on this
        machine, where every program runs as the controller's user and a name is all a caller gives."""
        if not self.secure:
            return uid_of(user)
        record = self.controller.state.users.get(user)
        return uid_of(record.unix_user if record is not None else None)

    def device_environment(self) -> dict[str, str]:
        """What a program's run is given to reach the DeviceService (its run token aside): {} when it is off."""
        if self.device_address is None:
            return {}
        env = {"VIPU_DEVICE_ADDRESS": self.device_address}
        if self.device_cert:
            env["VIPU_DEVICE_CERT"] = self.device_cert  # public: the chain the program checks the controller by
        return env

    def user_for_key(self, key: str):
        with self.lock:
            return self.controller.admin.user_for_key(key)

    def key_role(self, key: str) -> str | None:
        """"admin" or "user" for a user's access key, None for no valid key (the metrics endpoint under --secure)."""
        user = self.user_for_key(key)
        return None if user is None else "admin" if user.admin else "user"

    # -- what several operations share --------------------------------------------------------------------------
    def changed(self) -> None:
        """Something changed that may let a job start: the loop steps soon."""
        self.loop.wake()

    def fail_ipus(self, ipus: list[int], cause: str, reason: str = "") -> list:
        """Take IPUs out of service (an operator's FailIpus, or their machine was lost: `cause` says which, for
        the jobs they end): the partitions on them fail, jobs on them end NODE_FAIL (requeued if their spec
        allows) and lose their partitions. Each IPU keeps why (`reason`, else `cause`), who asked and when.
        Returns the partitions that failed."""
        with self.lock:
            now = self.now()
            why = Reason(text=reason or cause, user=asked_by()[0], at=now)
            failed = self.controller.partitions.fail_ipus(ipus, why)
            self.driver.apply(self.scheduler.fail_ipus(ipus, now, cause), now)
        self.changed()
        return failed

    def _machines_lost(self, machines: list[int]) -> None:
        ipus = [ipu for m in machines for ipu in self.topology.machine_ipus(m)]
        self.fail_ipus(ipus, f"the actor of machine{'s' if len(machines) > 1 else ''}"
                             f" {', '.join(map(str, machines))} died or restarted")

    def _forget(self, jobs: list) -> None:
        """Jobs moved out of memory: their runners let go of them too (called under the lock)."""
        self.ends.forget(job.id for job in jobs)
        for job in jobs:
            runner = self.runners.get(job.spec.workload.kind)
            if runner is not None:
                runner.forget(job.id)

    def _release(self, partition: str) -> None:
        """A stopped run's work has ended: its partition goes, a job may take its IPUs, and its own job (requeued
        meanwhile) may start again. Not while its job's end waits for the store (a rollback kept the job running):
        recording the end removes it."""
        with Recording(self.lock):
            if not any(job_partition_name(job_id) == partition for job_id in self.ends.held):
                self.executor.release(partition)
                job_id = job_of_partition(partition)
                if job_id is not None:
                    self.scheduler.cleaned(job_id, self.now())
        self.changed()

    def _finish(self, job_id: int, started: float, exit_code: int, state, signal: int = 0, records=(),
                why: str | None = None) -> None:
        """A runner's run ended by itself (the caller holds the lock); `records`, the runner's records of it, are
        written with its end. While the store cannot write, the end waits and the job stays RUNNING (run_ends.py)."""
        end = RunEnd(job_id, started, self.now(), exit_code, state, signal, tuple(records), why)
        if self.store.writable and not self.store.failed:
            self._record_end(end)
            return
        self.ends.hold(end)
        log.warning("job %s: its run ended (exit code %d) while the state store cannot write: it stays RUNNING, and"
                    " its end is recorded once the store writes again", job_id, exit_code)

    def _stopped_end(self, job_id: int, started: float, exit_code: int, signal: int) -> None:
        """How a stopped run's program ended (the caller holds the lock): its job's ExitCode. Not while the store
        cannot write: the job keeps the signal it was stopped with."""
        if self.store.writable and not self.store.failed:
            program_ended(self.scheduler, job_id, started, exit_code, signal, self.now())

    def _record_end(self, end: RunEnd) -> None:
        self.ends.give(end)
        if end.records:
            self.store.commit(list(end.records), [])
        self.driver.ended(end.job_id, end.started, end.at, end.exit_code, end.state, end.signal, end.why)

    def record_held_ends(self) -> None:
        """The ends that waited for the store, now that it writes (the caller holds the lock): each recorded with
        its real time and exit code, before anything else of the step."""
        for end in sorted(self.ends.held.values(), key=lambda e: (e.at, e.job_id)):
            if self.scheduler.table.running_since(end.job_id, end.started) is None:
                self.ends.held.pop(end.job_id)  # (ended otherwise meanwhile: an operator's cancel)
            else:
                self._record_end(end)

    def progress(self) -> dict:
        """Every running job's step reports so far, by job id (metrics, `vipu top`)."""
        out: dict = {}
        for runner in self.runners.values():
            out.update(runner.progress())
        return out

    def machine_stats(self) -> dict[int, dict]:
        """Every machine's counters: from its actor, or with --ray off from the runs' step reports and the link
        counters their transports count into (the same shape either way). A modelled job's IPUs read its predicted
        step either way: it computes nothing on the actors."""
        from vipu.jobs.train.stats_without_actors import machine_stats, with_modelled

        if self.machines.enabled:
            return with_modelled(self.machines.stats(), self.progress().values(), self.pod.machine.ipus)
        return machine_stats(self.progress().values(), self.machines.link_bytes(), self.pod.machine.ipus)

    # -- life -------------------------------------------------------------------------------------------------
    def use_machines(self, mode: str, health_check_s: float, bundle: dict[str, float] | None = None,
                     nodes_may_join: bool = False) -> None:
        """Where the machine actors live (`--ray`: local, off or a cluster's address), how often they are checked,
        what each reserves on a Ray node, and whether the nodes offering it may join after the start (--ray-wait:
        started beside its head, as under KubeRay); before start_machines()."""
        self.machines.mode, self.machines.watch_s = mode, health_check_s
        self.machines.nodes_may_join = nodes_may_join
        if bundle is not None:
            self.machines.bundle = bundle

    @property
    def machines_enabled(self) -> bool:
        return self.machines.enabled

    def start_machines(self) -> None:
        """Start (or attach to) Ray now: a minute here, so before the controller serves."""
        self.machines.start()

    def stop_machines(self) -> None:
        self.machines.shutdown()

    def kill_local_ray(self) -> None:
        """End every process of a local Ray this controller started, at once (a stop that cannot wait)."""
        self.machines.kill_local_ray()

    def close(self) -> bool:
        """The store, last: everything committed is durable. False if its disk did not answer (store.close)."""
        return self.store.close()

    def step(self) -> None:
        """One step of the loop, now: what the loop's thread does when woken (tests without the thread call it)."""
        with self.lock:
            self.record_held_ends()
            self.driver.step(self.now())

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        """Stop scheduling and the runs in this process (their jobs' ends are the restart's to record). Ends that
        waited for the store are recorded first if it writes now: the restart could not tell them from a run the
        stop cut short, and would run their programs again."""
        self.loop.stop()
        if self.ends.held and self.store.writable:
            with Recording(self.lock):
                self.record_held_ends()
        for runner in self.runners.values():
            runner.shutdown()
