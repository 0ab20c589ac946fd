"""MachinePool: the machine actors of a Pod, created when a job first needs them and kept while in service.

Starting an actor costs ~0.5 s and ~150-200 MB, so a Pod256's 64 are not started up front: actors_for() starts
the missing ones of a partition together, waits until they answer (or fails with the machines that did not), and
keeps them, so the next job on those machines waits for nothing. A machine's actor lives until release() or
shutdown(), independent of partitions coming and going.

Pinning: each machine gets its own placement group of one bundle (by default {"CPU": 0.01}; Ray refuses bundles
that are all zero), and its actor (num_cpus=0) is scheduled into that bundle. The reservation belongs to the
machine, not to a partition, because the actor outlives partitions; when Ray restarts the actor it comes back into
the same bundle, on the same node. On a cluster where nodes advertise custom resources for the machines they host,
pass `bundle` (e.g. {"ipu_host_3": 0.01}) to pin each machine to them. 64 machines reserve 0.64 CPU.

Faults: kill() kills a machine's process and lets Ray restart it (up to actor.MAX_RESTARTS times). The restart is
surfaced, not hidden: health() shows `restarts` going up, calls in flight fail, and everything the machine held
(tensors, offloaded data, marked failures, counters) is gone, as after a real machine reboot. Ray must already be
running: the pool never starts it (the server or the test session does).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Collection, Iterable

import ray
from ray import ObjectRef
from ray.actor import ActorHandle
from ray.exceptions import ActorUnavailableError
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from vipu.errors import FailedPrecondition, InvalidArgument, NotFound, Unavailable
from vipu.hardware.pod import PodConfig
from vipu.workers.actor import MAX_RESTARTS, MachineActor
from vipu.workers.fleet import DEFAULT_BUNDLE

log = logging.getLogger("vipu.machines")
PROBE_S = 1.0  # how long a health check waits for the machines' own answers (their failed IPUs and links)


def actor_state(handle: ActorHandle) -> dict:
    """What Ray's GCS knows of an actor: alive (ALIVE), dead (DEAD: Ray gave up on it), its restarts, node and
    process. One GCS lookup; never waits on the actor."""
    from ray._private import state  # the GCS actor table; ray.util.state needs the dashboard, which may be off

    info = state.actors(actor_id=handle._actor_id.hex())
    if not info:
        return {"alive": False, "dead": False, "error": "Ray's GCS does not know this actor (yet)"}
    alive = info["State"] == "ALIVE"
    out = {"alive": alive, "dead": info["State"] == "DEAD", "restarts": int(info["NumRestarts"]),
           "node": info["Address"]["NodeID"] if alive else None, "pid": int(info["Pid"]) if alive else None}
    if not alive:
        out["error"] = f"Ray reports the actor {info['State']}"
    return out


class MachinePool:
    def __init__(self, pod: PodConfig, *, bundle: dict[str, float] | None = None, ready_timeout_s: float = 60.0,
                 call_timeout_s: float = 10.0, place_timeout_s: float = 60.0):
        if not ray.is_initialized():
            raise FailedPrecondition("Ray is not running; call ray.init() before creating a MachinePool (the server"
                                     " does this at start-up)")
        self.pod = pod
        self.bundle = dict(bundle or DEFAULT_BUNDLE)
        self.ready_timeout_s = ready_timeout_s  # for a placed actor to answer
        self.place_timeout_s = place_timeout_s  # for a machine's placement group to be placed
        self.call_timeout_s = call_timeout_s
        self.created = 0  # actors ever started by this pool (restarts by Ray not included)
        self._actors: dict[int, ActorHandle] = {}
        self._groups: dict[int, PlacementGroup] = {}
        self._starting: dict[int, threading.Event] = {}  # machines being started now -> set when that start ends
        self._asked: dict[int, tuple[int, ObjectRef]] = {}  # machine -> its stats call not yet answered, numbered
        self._asks = 0  # stats calls made so far: the next one's number
        self._lock = threading.Lock()  # the four maps above; never held while waiting on Ray
        self._closed = threading.Event()
        self.lost: Callable[[], Collection[int]] = frozenset  # machines the controller found lost (the fleet sets
        # it): a collective waiting on one of them ends (fabric/actor_calls.py)

    @property
    def machines(self) -> list[int]:
        """Machines that have an actor now."""
        return sorted(self._actors)

    def actors_for(self, machines: Iterable[int]) -> dict[int, ActorHandle]:
        """The actors of `machines`, starting the missing ones (together) and waiting until each answers. Machines
        another caller is starting are waited for, not started twice.

        Why no lock is held while actors start: a start can wait minutes (a node that cannot place them), and the
        health checks, other jobs' machines and shutdown must not wait behind it."""
        wanted = sorted(set(machines))
        bad = [m for m in wanted if not 0 <= m < self.pod.machines]
        if bad:
            raise InvalidArgument(f"machines {bad} are not in {self.pod.name}; machines are 0..{self.pod.machines - 1}")
        while True:
            with self._lock:
                self._check_open()
                others = {self._starting[m] for m in wanted if m in self._starting}
                missing = [m for m in wanted if m not in self._actors]
                if not others and not missing:
                    return {m: self._actors[m] for m in wanted}
                if not others:
                    done = threading.Event()
                    self._starting.update((m, done) for m in missing)
                    break
            for started in others:  # then look again: a start that failed leaves its machines missing
                started.wait()
        try:
            self._start(missing)
        finally:
            with self._lock:
                for m in missing:
                    del self._starting[m]
            done.set()
        with self._lock:
            self._check_open()
            gone = [m for m in wanted if m not in self._actors]
            if gone:
                raise Unavailable(f"machines {gone} were taken out of service while their actors started; try again")
            return {m: self._actors[m] for m in wanted}

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise Unavailable("the machine pool is shut down (the controller is stopping)")

    def _start(self, machines: list[int]) -> None:
        started = {}
        for m in machines:
            group = placement_group([self.bundle], strategy="STRICT_PACK")
            strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0)
            started[m] = (MachineActor.options(scheduling_strategy=strategy).remote(self.pod, m), group)
            self.created += 1
        # first the reservations: a bundle no node has free never places, and must say so, not wait as a slow start
        placing = {started[m][1].ready(): m for m in machines}
        placed = {placing[ref] for ref in self._wait(list(placing), self.place_timeout_s)}
        problems = {m: f"no Ray node had {self.bundle} free for its placement group within"
                       f" {self.place_timeout_s:g} s" for m in machines if m not in placed}
        if problems and not self._closed.is_set():
            log.error("machines %s: their placement groups (%s each) were not placed within %g s; `ray status`"
                      " shows what the nodes have free", sorted(problems), self.bundle, self.place_timeout_s)
        probes = {started[m][0].health.remote(): m for m in machines if m in placed}
        ready = self._wait(list(probes), self.ready_timeout_s)
        problems.update({probes[ref]: f"no answer within {self.ready_timeout_s:g} s" for ref in probes
                         if ref not in ready})
        for ref in ready:
            try:
                ray.get(ref)
            except Exception as e:  # noqa: BLE001 - any failure to start is reported with its machine
                problems[probes[ref]] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        with self._lock:
            closed = self._closed.is_set()  # under the lock: shutdown() then finds these actors, or we kill them
            for m, (handle, group) in started.items():
                if m not in problems and not closed:
                    self._actors[m], self._groups[m] = handle, group
        for m, (handle, group) in started.items():
            if m in problems or closed:
                ray.kill(handle, no_restart=True)
                remove_placement_group(group)
        self._check_open()
        if problems:
            detail = "; ".join(f"machine {m}: {why}" for m, why in sorted(problems.items()))
            raise Unavailable(f"machine actors did not start ({detail}); check `ray status` for free CPU"
                              f" ({self.bundle} is reserved per machine) and memory, then try again")

    def _wait(self, refs: list, timeout_s: float) -> set:
        """The refs that answer within timeout_s, looking every second whether the pool was shut down."""
        deadline = time.monotonic() + timeout_s
        ready: set = set()
        pending = refs
        while pending and not self._closed.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done, pending = ray.wait(pending, num_returns=len(pending), timeout=min(left, 1.0))
            ready.update(done)
        return ready

    def actor(self, machine: int) -> ActorHandle:
        try:
            return self._actors[machine]
        except KeyError:
            raise NotFound(f"machine {machine} has no actor now: none has started on it yet, or Ray gave up"
                           f" restarting it after {MAX_RESTARTS} restarts; one starts when a job next runs on the"
                           " machine") from None

    def health(self, machines: Iterable[int] | None = None) -> dict[int, dict]:
        """Every actor's health (or these machines'): whether it lives, its restarts, node and process, from Ray's
        GCS, and what the machine itself says (failed IPUs and links) if it answers within PROBE_S. An actor Ray
        gave up on (restarts exhausted) is reported dead and dropped, so the next actors_for() starts a fresh one;
        one being restarted (or whose node is gone) is reported as not alive, and kept; one the GCS did not answer
        for is left out of the report.

        Why the GCS and not only the actor: an actor runs its work one call at a time, and a call waiting on a
        peer on a dead node holds up every later call from this process, a probe too (Ray starts one caller's calls
        in order); a busy machine must not be taken for a lost one."""
        wanted = None if machines is None else set(machines)
        with self._lock:
            handles = {m: h for m, h in self._actors.items() if wanted is None or m in wanted}
        states = {}
        for m, handle in handles.items():
            try:
                states[m] = actor_state(handle)
            except Exception as e:  # noqa: BLE001 - the GCS did not answer: unknown, so left out, neither alive nor
                # lost (a GCS hiccup must not fail every machine, nor end the caller: the watcher, a run's end)
                log.warning("machine %s: Ray's GCS did not say whether its actor lives (%s); asked again at the next"
                            " look", m, str(e).splitlines()[0] if str(e) else type(e).__name__)
        # only the live ones: a probe of one whose node is gone would wait in Ray's queue for a restart that may
        # never come
        answered, _ = self._answers({m: handles[m].health.remote() for m, state in states.items()
                                     if state["alive"]}, PROBE_S)
        for m, state in states.items():
            if state["dead"]:
                self._forget(m)
        return {m: {"machine": m, **answered.get(m, {}), **state} for m, state in states.items()}

    def stats(self, wait_s: float) -> dict[int, tuple[int, dict]]:
        """Each actor's counters that answer within wait_s, asked all at once (the health group: a call running
        long does not hold them up), with the number of the ask they answer; the others are absent. An actor still
        owing the answer to an earlier ask is not asked again: a machine held up by a call waiting on a peer gets one
        stats call queued, not one a scrape. Why the numbers: two scrapes at once may come back in either order, and
        the answer to the later ask is the newer one (a machine answers its health group's calls one at a time, in
        the order this process made them: actor.py), so a caller can keep counters from going back."""
        with self._lock:
            for m in set(self._asked) - set(self._actors):
                del self._asked[m]
            for m, handle in self._actors.items():
                if m not in self._asked:
                    self._asked[m] = (self._asks, handle.stats.remote())
                    self._asks += 1
            asked = dict(self._asked)
        answers, done = self._answers({m: ref for m, (_, ref) in asked.items()}, wait_s)
        with self._lock:
            for m, ask in asked.items():
                if ask[1] in done and self._asked.get(m) is ask:
                    del self._asked[m]
        return {m: (asked[m][0], answer) for m, answer in answers.items()}

    @staticmethod
    def _answers(calls: dict[int, ObjectRef], wait_s: float) -> tuple[dict[int, dict], set[ObjectRef]]:
        """The results of the calls that succeed within wait_s (by machine), and the calls that ended."""
        done, _ = ray.wait(list(calls.values()), num_returns=len(calls), timeout=wait_s) if calls else ([], [])
        ready = set(done)
        out = {}
        for m, ref in calls.items():
            if ref in ready:
                try:
                    out[m] = ray.get(ref, timeout=0)
                except Exception:  # noqa: BLE001 - a machine restarting answers nothing; its state says why
                    continue
        return out, ready

    # --- fault injection ----------------------------------------------------------------------------------------
    def kill(self, machine: int, restart: bool = True) -> None:
        """Kill a machine's process; with restart Ray starts it again (empty), without it the actor is gone."""
        handle = self.actor(machine)
        ray.kill(handle, no_restart=not restart)
        if not restart:
            self._forget(machine)

    def fail_ipu(self, ipu: int) -> None:
        """Fail a Pod-wide IPU (its machine must have an actor)."""
        ray.get(self.actor(ipu // self.pod.machine.ipus).fail_ipu.remote(ipu), timeout=self.call_timeout_s)

    def fail_link(self, a: int, b: int) -> list[int]:
        """Fail the IPU-Link between Pod-wide IPUs a and b on each end's machine that has an actor; returns those
        machines (a machine started later does not know: its actor starts healthy)."""
        ends = sorted({a // self.pod.machine.ipus, b // self.pod.machine.ipus} & set(self._actors))
        if not ends:
            raise NotFound(f"neither end of IPU-Link {a}-{b} is on a machine with an actor; start one first")
        ray.get([self._actors[m].fail_link.remote(a, b) for m in ends], timeout=self.call_timeout_s)
        return ends

    def repair(self, machines: Iterable[int] | None = None) -> None:
        """Each machine's actor told its IPUs work again. An actor Ray is restarting is left alone: it comes back
        empty, its IPUs working (a repair just after a kill met one, and failed the whole repair)."""
        targets = self.machines if machines is None else sorted(set(machines))
        for call in [self.actor(m).repair.remote() for m in targets]:
            try:
                ray.get(call, timeout=self.call_timeout_s)
            except ActorUnavailableError:
                pass

    # --- end of service -------------------------------------------------------------------------------------------
    def release(self, machine: int) -> None:
        """Take a machine out of service: kill its actor for good and free its reservation."""
        handle = self.actor(machine)
        ray.kill(handle, no_restart=True)
        self._forget(machine)

    def shutdown(self) -> None:
        """Kill every actor and free its reservation; starts in progress give up within a second and kill theirs."""
        self._closed.set()
        for m in self.machines:
            self.release(m)

    def _forget(self, machine: int) -> None:
        with self._lock:
            self._actors.pop(machine, None)
            group = self._groups.pop(machine, None)
        if group is not None:
            remove_placement_group(group)
