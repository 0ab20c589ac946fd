"""Where a collective's data lives: the Transport protocol every job's data path is written against.

A transport is the machines as a job sees them, addressed by Pod-wide IPU numbers. The collectives need three
things from it: a tensor's size (spec), its synchronous steps of transfers (run_steps: every read of a step happens
before any write of it) and being told what the collective cost (record). A training job needs the rest: tensors put,
read and freed one IPU at a time (as the machine actor's methods take them) or for many IPUs at once, moved to and
from Streaming Memory, SRAM reserved or declared held, and each step's streaming and compute charged on the
machines' counters. Implementations: LocalTransport (local_transport.py: numpy arrays in-process, no capacity),
RayTransport (ray_transport.py: the machine actors) and MachineTransport (machine_transport.py: the machines the
actors would wrap, in-process); WrappedTransport below is the base of the wrappers that
change one thing about another transport (jobs/train/data_path.py: PricedAs, Scoped).

One argument order: a method about one IPU takes (ipu, name, ...) as the machine actor does; a method about many
IPUs takes the tensor's name first, then what each IPU gets (put_tensors(name, arrays), hold(name, held)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np

from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.transfer_schedule import Transfer

if TYPE_CHECKING:
    from vipu.workers import bsp


class Transport(Protocol):
    @property
    def deferred(self) -> bool:
        """Whether calls are queued and a read waits for them: an actor round trip (RayTransport, deferred). The
        training data path then computes what it must go on with itself and checks it later (data_path.py)."""

    # --- what the collectives need --------------------------------------------------------------------------------
    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        """(elements, dtype) of tensor `name` on `ipu`: every IPU of the group holds one of that shape."""

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        """Move the data of each step in turn, a step being its transfers: each reads the ranges on src and adds
        them into (reduce) or writes them over the same ranges on dst; all reads of a step see the state before it.
        Callers give hazard-free steps (transfer_schedule.check_hazards): no IPU reads what another transfer of the
        same step writes, so a transport may run a step's reads and writes in any order."""

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        """Account the collective's traffic and virtual time (the machines' link counters), as if it ran `times`
        times (a stacked collective: one per micro-batch, data_path.Fabric._moved)."""

    # --- tensors on one IPU ---------------------------------------------------------------------------------------
    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        """Place `array` on the IPU (over its first `tiles` tiles, default all), replacing a tensor of that name."""

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        """The tensor's values as they are now, in the shape it was put; never changed by the transport afterwards,
        and perhaps read-only (Ray's and the in-process machines' are: owned() in jobs/train/data_path.py copies
        one to write)."""

    def free_tensor(self, ipu: int, name: str) -> None:
        """Free `name` wherever it is: on the IPU, offloaded to Streaming Memory, reserved or held."""

    # --- tensors on many IPUs at once (one round trip) ------------------------------------------------------------
    def free_tensors(self, held: Iterable[tuple[int, str]]) -> None:
        """free_tensor of each (IPU, name) of `held`, best effort (a job's cleanup): a tensor already gone, or on a
        machine that is gone, is skipped."""

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray], handed: bool = False) -> None:
        """Put arrays[ipu] on each IPU under `name`. `handed`: the caller gives the arrays up (it keeps no view of
        them to write through), so a transport may hold them as they are instead of a copy; each is read-only once
        put (hand_over), on every transport, so that a caller's later write raises rather than changes an IPU."""

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        """IPU -> its tensor `name`, as get_tensor gives it."""

    def get_tensors_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        """get_tensors of the tensors as they are now, returned when the result is called: the read may go on while
        the caller does (a pipeline stage's receive is read when the next stage needs it)."""

    def offload(self, name: str, ipus: Sequence[int]) -> None:
        """Move `name` of each IPU to its machine's Streaming Memory, uncharged (record_streaming charges a step's
        streaming as one batch); get_tensor fails until load()."""

    def load(self, name: str, ipus: Sequence[int]) -> None:
        """Move `name` of each IPU back from Streaming Memory onto its tiles, uncharged."""

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        """Place arrays[ipu] straight in each IPU's machine's Streaming Memory under `name` (host I/O, uncharged,
        never through SRAM): what load() then brings onto the IPU."""

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        """Hold sizes[ipu] bytes of each IPU's SRAM under `name` with no data (buffers the caller keeps elsewhere):
        more than fits fails as a put does."""

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        """Declare what each IPU of a training job holds on the Pod, held[ipu] = (SRAM at the step's peak,
        Streaming Memory), under `name` until freed: what the machines then report for those IPUs (Machine.hold)."""

    # --- what a training step cost the machines, for their counters ----------------------------------------------
    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        """Charge each machine its step's streaming, per_machine[m] = (bytes in, bytes out), as one duplex batch
        (hardware/streaming_cost.py duplex_s)."""

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        """Add steps[m], a BSP step standing for the training step, to machine m's phase counters: the utilisation
        `vipu top` shows."""


def by_machine_index(ipus: Sequence[int], ipus_per_machine: int) -> dict[int, list[int]]:
    """Machine -> the numbers inside it of those of `ipus` it holds: how a transport batches a call per machine."""
    machines: dict[int, list[int]] = {}
    for ipu in ipus:
        machines.setdefault(ipu // ipus_per_machine, []).append(ipu % ipus_per_machine)
    return machines


def held_by_machine(held: Iterable[tuple[int, str]], ipus_per_machine: int) -> dict[int, list[tuple[int, str]]]:
    """Machine -> (the IPU's number inside it, tensor name) for each (IPU, name) of `held`: a cleanup batched per
    machine."""
    machines: dict[int, list[tuple[int, str]]] = {}
    for ipu, name in held:
        machines.setdefault(ipu // ipus_per_machine, []).append((ipu % ipus_per_machine, name))
    return machines


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a and b have the same shape and bytes (a.tobytes() == b.tobytes(), NaNs and -0.0 included); past 64
    KiB compared as unsigned integers of the items' width: no copies, a few times faster on a step's weights."""
    if a.shape != b.shape or a.dtype.itemsize != b.dtype.itemsize:
        return False
    if a.dtype.itemsize not in (1, 2, 4, 8) or a.nbytes <= 1 << 16:  # the copies cost less than array_equal
        return a.tobytes() == b.tobytes()
    bits = f"u{a.dtype.itemsize}"
    return np.array_equal(np.ascontiguousarray(a).view(bits), np.ascontiguousarray(b).view(bits))


def twin(kept: np.ndarray, array: np.ndarray) -> bool:
    """Whether `array` can travel as `kept`: the same dtype and bits. About 64 items spread over them first, so that
    arrays that differ rarely cost a whole comparison (shards of a flat buffer may begin and end alike: its
    replicated layer norms)."""
    if kept.dtype != array.dtype or kept.shape != array.shape:
        return False
    a, b = kept.reshape(-1), array.reshape(-1)
    step = max(1, a.size // 64)
    return same_bits(a[::step], b[::step]) and same_bits(kept, array)


def hand_over(arrays: Mapping[int, np.ndarray]) -> None:
    """Make the arrays a caller handed to put_tensors read-only: a transport that copies them (LocalTransport,
    RayTransport) refuses the caller's later writes as the one that holds them (MachineTransport) does."""
    for array in arrays.values():
        if isinstance(array, np.ndarray):
            array.flags.writeable = False


def once_each(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """`arrays`, each that is a twin of an earlier one replaced by that one: pickled in one call, an object goes
    once (what a machine sends back of the replicas' equal weights, state and reduced gradients)."""
    distinct: list[np.ndarray] = []
    out = []
    for array in arrays:
        kept = next((kept for kept in distinct if twin(kept, array)), None)
        if kept is None:
            distinct.append(kept := array)
        out.append(kept)
    return out


class WrappedTransport:
    """A transport that passes every call on to the one it wraps (`inner`): a wrapper overrides only what it
    changes."""

    def __init__(self, inner: Transport):
        self.inner = inner

    @property
    def deferred(self) -> bool:
        return self.inner.deferred

    def spec(self, ipu: int, name: str) -> tuple[int, np.dtype]:
        return self.inner.spec(ipu, name)

    def run_steps(self, name: str, steps: Sequence[Sequence[Transfer]]) -> None:
        self.inner.run_steps(name, steps)

    def record(self, result: CollectiveResult, times: int = 1) -> None:
        self.inner.record(result, times)

    def put_tensor(self, ipu: int, name: str, array: np.ndarray, tiles: int | None = None) -> None:
        self.inner.put_tensor(ipu, name, array, tiles)

    def get_tensor(self, ipu: int, name: str) -> np.ndarray:
        return self.inner.get_tensor(ipu, name)

    def free_tensor(self, ipu: int, name: str) -> None:
        self.inner.free_tensor(ipu, name)

    def free_tensors(self, held: Iterable[tuple[int, str]]) -> None:
        self.inner.free_tensors(held)

    def put_tensors(self, name: str, arrays: Mapping[int, np.ndarray], handed: bool = False) -> None:
        self.inner.put_tensors(name, arrays, handed)

    def get_tensors(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        return self.inner.get_tensors(name, ipus)

    def get_tensors_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        return self.inner.get_tensors_later(name, ipus)

    def offload(self, name: str, ipus: Sequence[int]) -> None:
        self.inner.offload(name, ipus)

    def load(self, name: str, ipus: Sequence[int]) -> None:
        self.inner.load(name, ipus)

    def put_offloaded(self, name: str, arrays: Mapping[int, np.ndarray]) -> None:
        self.inner.put_offloaded(name, arrays)

    def reserve(self, name: str, sizes: Mapping[int, int]) -> None:
        self.inner.reserve(name, sizes)

    def hold(self, name: str, held: Mapping[int, tuple[int, int]]) -> None:
        self.inner.hold(name, held)

    def record_streaming(self, per_machine: Mapping[int, tuple[int, int]]) -> None:
        self.inner.record_streaming(per_machine)

    def record_compute(self, steps: Mapping[int, bsp.Step]) -> None:
        self.inner.record_compute(steps)
