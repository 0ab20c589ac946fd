"""The calls RayTransport makes to machine actors: submitted now, or queued per machine and sent as one call.

Why: on a small machine every actor call costs the scheduling of another process, so what a collective does on one
machine (put its tensors, run its steps, count its traffic, read its results) goes as one call, `calls` on the
actor, and the caller waits once. Order is kept: the queue of a machine is sent before any call submitted directly
to it, and Ray runs one caller's calls to an actor in the order they were submitted
(https://docs.ray.io/en/latest/ray-core/actors/task-orders.html; the actors never retry a call).

Deferred (a training run's transport): calls that return nothing are queued or left pending, and the next wait
awaits them first, raising the first error among them in submission order. Not deferred (a program's session):
every call is awaited as it is made.

A lost peer: a call whose arguments come from a machine on a Ray node that died waits until Ray gives up on that
actor, which can be never (its restart waits for a node that is gone). So a wait looks every LOOK_S whether the
controller has found one of these machines lost (`lost`, the fleet's FailureWatch) and then ends as MachineLost.

Reads ahead (deferred): a read queued with read() rides in its machine's next batch, and whichever wait first
awaits that batch keeps its result until the reader asks (results): the reads a pipeline tick's stages receive,
and the sends they make, cost the tick one call per machine and one wait, not one of each per send.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable, Collection, Mapping

import ray
from ray import ObjectRef
from ray.actor import ActorHandle
from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError, RayTaskError

from vipu.errors import MachineLost, NotFound, VipuError

LOOK_S = 0.5  # how often a wait looks whether the controller found one of its machines lost


class Batch:
    """A machine's queued batch as its readers know it: its ObjectRef once sent, its result once awaited."""

    def __init__(self):
        self.ref: ObjectRef | None = None
        self.readers = 0  # reads in it whose results are not yet asked for
        self.result: list | None = None


class ActorCalls:
    def __init__(self, actors: Mapping[int, ActorHandle], timeout_s: float | None, deferred: bool,
                 lost: Callable[[], Collection[int]] = frozenset):
        self.actors = dict(actors)
        self.timeout_s = timeout_s
        self.deferred = deferred
        self.lost = lost  # the machines the controller has found lost now
        self.queued: dict[int, list[tuple[str, tuple]]] = defaultdict(list)  # machine -> (method, args), in order
        self.pending: list[ObjectRef] = []  # submitted, not yet awaited
        self.reading: dict[int, Batch] = {}  # machine -> its queued batch, if a read is in it
        self.sent: dict[ObjectRef, Batch] = {}  # sent batches with reads, until awaited

    def known(self, machine: int) -> ActorHandle:
        try:
            return self.actors[machine]
        except KeyError:
            raise NotFound(f"machine {machine} has no actor in this transport; build it for the group's"
                           " machines") from None

    def actor(self, machine: int) -> ActorHandle:
        """The machine's actor, for a call submitted now: everything queued is sent first."""
        actor = self.known(machine)
        self.send()
        return actor

    def queue(self, machine: int, method: str, *args) -> int:
        """Queue actor.method(*args) (deferred), or submit it now; returns its place in the machine's next batch."""
        self.known(machine)
        if not self.deferred:
            self.pending.append(getattr(self.actor(machine), method).remote(*args))
            return -1
        self.queued[machine].append((method, args))
        return len(self.queued[machine]) - 1

    def read(self, machine: int, method: str, *args) -> tuple[Batch, int]:
        """Queue actor.method(*args), a read (deferred only): its batch and its place there, for results()."""
        place = self.queue(machine, method, *args)
        batch = self.reading.setdefault(machine, Batch())
        batch.readers += 1
        return batch, place

    def results(self, batches: list[Batch]) -> list[list]:
        """Each batch's results: waited for (with everything else) unless a wait already awaited them."""
        if any(batch.result is None for batch in batches):
            self.send()
            self.wait([batch.ref for batch in batches if batch.result is None])
        out = []
        for batch in batches:
            out.append(batch.result)
            batch.readers -= 1
            if not batch.readers:
                batch.result = None  # the arrays are the reader's now
        return out

    def send(self) -> dict[int, ObjectRef]:
        """Each machine's queue as one call; the calls are pending."""
        refs = {m: self.actors[m].calls.remote(batch) for m, batch in self.queued.items()}
        self.queued = defaultdict(list)
        self.pending.extend(refs.values())
        for m, batch in self.reading.items():
            batch.ref = refs[m]
            self.sent[batch.ref] = batch
        self.reading = {}
        return refs

    def submitted(self, refs: list[ObjectRef]) -> None:
        """Calls that return nothing: pending until the next wait (deferred), else awaited now."""
        self.pending.extend(refs)
        if not self.deferred:
            self.wait([])

    def wait(self, refs: list[ObjectRef]) -> list:
        """Everything queued and pending, then `refs`: their results. The machines' own errors (a failed IPU, a
        missing tensor) are raised as themselves, a lost or silent machine as MachineLost (an Unavailable): half
        a collective has then run, so its tensors must be put again."""
        self.send()
        pending, self.pending = self.pending, []
        if refs:
            mine = set(refs)
            pending = [ref for ref in pending if ref not in mine]
        try:
            got = self._get(pending + refs)
        except (ActorDiedError, ActorUnavailableError, GetTimeoutError) as e:
            raise MachineLost(f"a machine actor did not complete its part of the collective"
                              f" ({type(e).__name__}: {str(e).splitlines()[0]}); the group's tensors are now partly"
                              " reduced: put them again and rerun the collective once the machine is back") from e
        except RayTaskError as e:
            if isinstance(e.cause, VipuError):
                raise e.cause from None
            raise
        for ref, result in zip(pending + refs, got):
            batch = self.sent.pop(ref, None)
            if batch is not None:
                batch.result = result
        return got[len(pending):]

    def _get(self, refs: list[ObjectRef]) -> list:
        """ray.get of the refs, ended early (MachineLost) once the controller finds one of these machines lost."""
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                return ray.get(refs, timeout=LOOK_S if left is None else min(left, LOOK_S))
            except GetTimeoutError:
                if left is not None and left <= LOOK_S:
                    raise
            gone = sorted(set(self.lost()) & set(self.actors))
            if gone:
                raise MachineLost(f"machines {gone} were lost (their actors stopped answering Ray) while this"
                                  " collective waited on them; the group's tensors are now partly reduced: put them"
                                  " again and rerun the collective once the machines are back")
