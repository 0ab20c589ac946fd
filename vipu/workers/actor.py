"""MachineActor: the Ray edge around one Machine; each method converts nothing, calls the domain, returns.

Why these options:
- num_cpus=0: the actor only holds state and does bookkeeping, so 16-64 of them share 2 cores; its slot is
  reserved instead by the placement-group bundle the pool pins it to (pool.py).
- max_restarts=3, max_task_retries=0: Ray restarts a crashed or killed machine (the emulated machine rebooting),
  but never replays a call on the new process: a collective half done on the old one must fail and be seen, not be
  silently applied twice.
- max_concurrency 1 (Ray's default) for the work: calls run one at a time, in the order each caller made them
  (allow_out_of_order_execution=False, said outright: Ray's default for max_concurrency 1 with concurrency groups
  or without, ray/actor.py; fabric/actor_calls.py relies on that order).
- a `health` concurrency group of one thread for health() and stats(): a scrape or a probe does not wait behind a
  call that runs long. Both read the machine under `_reading`, which every call of the work holds while it runs, so
  a reader never sees a change half made. A call whose arguments wait on a peer still holds up this caller's later
  calls, probes too (Ray starts one caller's calls in order): so whether a machine lives is asked of Ray's GCS
  (pool.actor_state), never of the actor alone.

A restart runs __init__ again: the new process starts with empty SRAM and Streaming Memory, no failures marked and
zeroed counters, as a rebooted machine would. health() surfaces the restart: `restarts` is Ray's own count from the
GCS actor table, which outlives the process.
"""

from __future__ import annotations

import functools
import os
import threading

import numpy as np
import ray

from vipu.fabric.transport import once_each
from vipu.hardware.pod import PodConfig
from vipu.workers import bsp, collective_steps
from vipu.workers.machine import Machine

MAX_RESTARTS = 3


def _restarts() -> int:
    """How often Ray has restarted the current actor, from the GCS (survives the process); if that private
    lookup ever fails, at least say whether this process is a restart."""
    context = ray.get_runtime_context()
    try:
        from ray._private import state

        # the table can still say 0 while the restarted process runs __init__
        return max(int(state.actors(context.get_actor_id())["NumRestarts"]),
                   int(context.was_current_actor_reconstructed))
    except Exception:  # noqa: BLE001 - a report must not crash the actor; fall back to the public flag
        return int(context.was_current_actor_reconstructed)


def _work(method):
    """A call of the work: holds the machine against the health group's readers while it runs."""
    @functools.wraps(method)
    def held(self, *args):
        with self._reading:
            return method(self, *args)
    return held


def _works(cls):
    """Every public method not in the health group is a call of the work (_work)."""
    for name, method in list(vars(cls).items()):
        if callable(method) and not name.startswith("_") and not hasattr(method, "__ray_concurrency_group__"):
            setattr(cls, name, _work(method))
    return cls


@ray.remote(num_cpus=0, max_restarts=MAX_RESTARTS, max_task_retries=0, concurrency_groups={"health": 1},
            allow_out_of_order_execution=False)
@_works
class MachineActor:
    def __init__(self, pod: PodConfig, machine_index: int):
        self.machine = Machine(pod, machine_index)
        self.restarts = _restarts()
        self._reading = threading.RLock()  # calls() runs the work's methods inside it

    def calls(self, batch: list[tuple[str, tuple]]) -> list:
        """Several of this actor's own calls as one, in order (RayTransport sends what a collective does on this
        machine so): each one's result."""
        return [getattr(self, method)(*args) for method, args in batch]

    @ray.method(concurrency_group="health")
    def health(self) -> dict:
        context = ray.get_runtime_context()
        with self._reading:
            machine = self.machine.health()
        return {**machine, "alive": True, "restarts": self.restarts, "pid": os.getpid(),
                "placement_group": context.get_placement_group_id(), "node": context.get_node_id()}

    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        self.machine.put_tensor(ipu, name, array, tiles)

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        return self.machine.get_tensor(ipu, name)

    def get_slice(self, ipu: int, name: str, start: int, stop: int) -> np.ndarray:
        return self.machine.get_slice(ipu, name, start, stop)

    def accumulate_slice(self, ipu: int, name: str, start: int, stop: int, values: np.ndarray,
                         sender: int | None = None) -> None:
        self.machine.accumulate_slice(ipu, name, start, stop, values, sender)

    def set_slice(self, ipu: int, name: str, start: int, stop: int, values: np.ndarray,
                  sender: int | None = None) -> None:
        self.machine.set_slice(ipu, name, start, stop, values, sender)

    def put_tensors(self, name: str, arrays: dict[int, np.ndarray]) -> None:
        for ipu, array in arrays.items():
            self.machine.put_tensor(ipu, name, array)

    def get_tensors(self, name: str, ipus: list[int]) -> list[np.ndarray]:
        """Equal arrays as one object, sent once (RayTransport._by_ipu copies it for each IPU again)."""
        return once_each([self.machine.view_tensor(ipu, name) for ipu in ipus])  # Ray copies what it returns

    def read_transfers(self, name: str, reads: list) -> list[np.ndarray]:
        return collective_steps.read_transfers(self.machine, name, reads)

    def exchange(self, name: str, steps: list, *packs: list[np.ndarray]) -> None:
        collective_steps.exchange(self.machine, name, steps, packs)

    def free_tensor(self, ipu: int, name: str) -> None:
        self.machine.free_tensor(ipu, name)

    def free_each(self, held: list[tuple[int, str]]) -> None:
        self.machine.free_each(held)

    def record_traffic(self, link_type: str, sent_bytes: int, received_bytes: int, virtual_s: float) -> None:
        self.machine.record_traffic(link_type, sent_bytes, received_bytes, virtual_s)

    def record_traffic_each(self, reports: list[tuple[str, int, int, float, int]]) -> None:
        for report in reports:
            self.machine.record_traffic(*report)

    def offload(self, ipu: int, name: str) -> float:
        return self.machine.offload(ipu, name)

    def load(self, ipu: int, name: str) -> float:
        return self.machine.load(ipu, name)

    def put_offloaded(self, ipu: int, name: str, array: np.ndarray) -> None:
        self.machine.put_offloaded(ipu, name, array)

    def offload_batch(self, ipus: list[int], name: str) -> None:
        self.machine.offload_batch(ipus, name)

    def load_batch(self, ipus: list[int], name: str) -> None:
        self.machine.load_batch(ipus, name)

    def settle_streaming(self, bytes_in: int, bytes_out: int) -> float:
        return self.machine.settle_streaming(bytes_in, bytes_out)

    def reserve(self, ipu: int, name: str, nbytes: int) -> None:
        self.machine.reserve(ipu, name, nbytes)

    def hold(self, name: str, held: dict[int, tuple[int, int]]) -> None:
        self.machine.hold(name, held)

    def run_step(self, step: bsp.Step) -> bsp.StepTimes:
        return self.machine.run_step(step)

    @ray.method(concurrency_group="health")
    def stats(self) -> dict:
        with self._reading:
            return {**self.machine.stats(), "restarts": self.restarts}

    def fail_ipu(self, ipu: int) -> None:
        self.machine.fail_ipu(ipu)

    def fail_link(self, a: int, b: int) -> None:
        self.machine.fail_link(a, b)

    def repair(self) -> None:
        self.machine.repair()
