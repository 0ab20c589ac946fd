"""The data path between a job's IPUs: every tensor-parallel, pipeline and data-parallel exchange, run through the
fabric's collectives on the job's transport (LocalTransport in-process, RayTransport on the machine actors).

IPU numbering (the planner's, assumptions.py): tensor shards innermost, then stages, then replicas, from the
partition's first IPU: IPU(replica, stage, shard) = first + (replica p + stage) t + shard. So
- a stage's t shards are an aligned block of t IPUs: the fabric's allreduce / all_gather on Group.block;
- a replica's t p IPUs are an aligned block: stage-to-stage sends stay inside it;
- the r IPUs holding the same shard of the same stage are t p apart: not a block, so the data-parallel allreduce
  runs on the rings fabric/strided.py builds (members in the order the partition's Hamiltonian ring visits them, for
  more than 2 both ways, each carrying half of every shard), all t p groups in the same steps, so links they share
  are priced with their contention; routes between non-neighbours take the shortest IPU-Link path inside the
  partition (hardware/links.py). The planner prices the same schedule (jobs/collective_time.py). When t p = 1 the
  groups are the partition: the fabric's own allreduce runs.
- with two tensor-parallel axes (t2 > 1) a stage's IPUs are t x t2, shard k = k1 t2 + k2: its t groups of t2
  adjacent IPUs are blocks (allreduce_t2 runs the fabric's collective on each; they run at once on their own
  links, so the op waits for the slowest), and its t2 groups of t IPUs t2 apart run on strided rings together
  (allreduce_t: on_groups, links they share priced with their contention), as the planner prices them
  (jobs/tensor_axes.py);
- Pipeline sends with t > 1 use Megatron's scatter-gather: shard k sends only its k-th piece of the boundary
  activation to shard k of the next stage, which then all-gathers (t = 1: one send of the whole). Each piece takes
  the shortest IPU-Link path inside the replica's block, which is one hop only where the two IPUs are linked.

Each exchange puts the sender's arrays on its IPUs, runs the collective, and reads the result back from the
receiving IPUs: the numbers a stage continues with are the ones that crossed the (emulated) links. A pipeline send
is the exception that makes a step cost one wait on machine actors, not one per pipeline tick: it only copies, so
the receiving stage continues at once with what the send must deliver (each piece where the scatter puts it, the
pieces as the all-gather joins them), and check_expected() compares that, bit for bit, with what did cross the
links before the step's update is applied (the read of the gradients has awaited those reads too). The trainer
does the same with the weights it put at the end of the last step (expect). Where a read waits for the machines
(transport.deferred), the tensor-parallel collectives are exceptions too: each also runs, the same schedule, on an
in-process mirror whose results the stage continues with, checked the same way (Fabric._exchange). There, a step
of a simple layout also runs its data-parallel allreduce on the mirror, and its checks wait for several steps
(run_ahead.py): on machine actors a step then waits for nothing.

A stage that runs several micro-batches stacked (micro_batches.py) moves them in one collective, priced, logged
and recorded as one per micro-batch (Fabric._moved).

Values are fp32 for every model (the numerical proof needs fp32), but the links are priced in the model's dtype:
for an fp16 model the transport is wrapped in PricedAs, whose spec() reports float16, so the fabric charges (and the
machines' counters record) the bytes the real Pod would move, while the fp32 values move unchanged.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Hashable, Sequence

import numpy as np

from vipu.errors import VipuError
from vipu.fabric import Group, all_gather, allreduce, reduce_scatter, shard
from vipu.fabric.collectives import execute, move, price
from vipu.fabric.known_schedules import Schedule, known
from vipu.fabric.schedule_cost import CollectiveResult
from vipu.fabric.strided import STEPS, group_rings
from vipu.fabric.transfer_schedule import Step, piece_sends
from vipu.fabric.transport import Transport, same_bits
from vipu.hardware.links import link_model
from vipu.hardware.topology import Topology
from vipu.jobs.train.transport_views import PricedAs, Scoped, Tiled, Unrecorded  # noqa: F401 - callers'
from vipu.sdk.nn.synthetic import DTYPE

TP, PP, DP = "tensor_parallel", "pipeline", "data_parallel"  # the kinds of traffic a step reports



class DataPathMismatch(RuntimeError):
    """The links delivered other values than a step went on with: a defect of the emulator, not of the job (a plain
    exception, not an assert, so that it holds under python -O too)."""

def free_each(transport: Transport, held) -> None:
    """Free each (IPU, tensor) of `held`, best effort: a machine that is gone has nothing left to free."""
    transport.free_tensors(sorted(held))


def run_schedule(op: str, name: str, steps: list[Step], transport: Transport, topology: Topology,
                 within: frozenset[int]) -> CollectiveResult:
    """Price a schedule of transfers on the Pod's links, move the data with exactly those steps, record it."""
    first = next(t.src for step in steps for t in step.transfers)
    _, dtype = transport.spec(first, name)
    return execute(op, name, steps, link_model(topology), dtype.itemsize, within, transport)


def run_shape(op: str, name: str, shape: Hashable, build: Callable[[], list[Step]], ipu: int, transport: Transport,
              topology: Topology, within: frozenset[int]) -> CollectiveResult:
    """run_schedule for a schedule that `shape` names (with the op, topology, routes' bounds and dtype: the key it is
    kept under, fabric/known_schedules.py): built, checked and priced the first time only; `ipu` holds `name`."""
    return move(name, shape_schedule(op, name, shape, build, ipu, transport, topology, within), transport)


def shape_schedule(op: str, name: str, shape: Hashable, build: Callable[[], list[Step]], ipu: int,
                   transport: Transport, topology: Topology, within: frozenset[int]) -> Schedule:
    """run_shape's schedule, without running it."""
    itemsize = transport.spec(ipu, name)[1].itemsize
    links = link_model(topology)
    return known(("data path", op, shape, topology, within, itemsize),
                 lambda: price(op, build(), links, itemsize, within))


ON_A_BLOCK = {"allreduce": allreduce, "reduce_scatter": reduce_scatter, "all_gather": all_gather}


def on_groups(op: str, groups: Sequence[Sequence[int]], name: str, transport: Transport, topology: Topology,
              partition: Group) -> CollectiveResult:
    """Run `op` (allreduce, reduce_scatter or all_gather) on `name` inside each of `groups` at once: IPUs of
    `partition` (an aligned block), each group in ascending order and all the same size, rank i of a group owning
    shard i (group.shard). One group that is itself an aligned block runs the fabric's collective on it (its rings);
    otherwise every group runs on the rings fabric/strided.py gives it (members in grid order, both ways for more
    than 2), all in the same steps, links they share priced with their contention. The engine's data-parallel
    collectives and a program's session (vipu/jobs/sessions) both run here."""
    block = _block_of(topology, tuple(groups[0])) if len(groups) == 1 else None
    if block is not None:
        return ON_A_BLOCK[op](block, name, transport)
    numels = [transport.spec(ipus[0], name)[0] for ipus in groups]
    first, size = partition.ipus[0], partition.size
    shape = (tuple(map(tuple, groups)), tuple(numels), first, size)
    return run_shape(op, name, shape, lambda: STEPS[op](group_rings(topology, groups, numels, first, size)),
                     groups[0][0], transport, topology, partition.members)


@lru_cache(maxsize=1024)
def _block_of(topology: Topology, ipus: tuple[int, ...]) -> Group | None:
    """The Group of `ipus` if they are an aligned block (is_block), made once: a training loop allreduces over the
    same groups every step."""
    return Group.block(topology, ipus[0], len(ipus)) if is_block(topology, ipus) else None


def is_block(topology: Topology, ipus: Sequence[int]) -> bool:
    """Whether `ipus` (ascending) are an aligned power-of-two block the fabric's own collectives run on."""
    if list(ipus) != list(range(ipus[0], ipus[0] + len(ipus))):
        return False
    try:
        Group.block(topology, ipus[0], len(ipus))
    except VipuError:
        return False
    return True


class Fabric:
    """A job's IPUs, its transport, and a log of every collective of the current step: (kind, result, times)."""

    def __init__(self, topology: Topology, first_ipu: int, layout, transport: Transport,
                 mirror: Transport | None = None):
        """mirror: where a read costs a wait (transport.deferred), an in-process transport the tensor-parallel
        collectives also run on (_exchange)."""
        self.topology, self.first, self.transport, self.mirror = topology, first_ipu, transport, mirror
        self.t, self.p, self.r = layout.tp, layout.p, layout.r  # t: every tensor-parallel IPU of a stage
        self.t1, self.t2 = layout.t, layout.t2
        self.partition = Group.block(topology, first_ipu, layout.ipus)
        self.log: list[tuple[str, CollectiveResult, int]] = []  # (kind, result, how many times it ran)
        self.expected: list[tuple[str, Callable[[], dict[int, np.ndarray]], dict[int, np.ndarray]]] = []
        self.held: set[tuple[int, str]] = set()  # (IPU, tensor) this job has put, freed by free_all()
        self._groups: dict[tuple[int, int], Group] = {}  # (first IPU, size) -> its block, made once
        self._tiled: dict = {}  # the schedules tiled for stacked micro-batches so far (Tiled)
        self._routes: dict = {}  # each send's ((its IPUs), zeros to receive in, its schedule), made once (send)

    def put(self, name: str, arrays: dict[int, np.ndarray], handed: bool = False) -> None:
        """handed: the caller will not use `arrays` again, so the transport may hold them without a copy (they are
        read-only from then: Transport.put_tensors)."""
        self.transport.put_tensors(name, arrays, handed)
        self.held.update((ipu, name) for ipu in arrays)

    def get(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        return self.transport.get_tensors(name, list(ipus))

    def expect(self, name: str, arrays: dict[int, np.ndarray]) -> None:
        """Read `name` on each IPU of `arrays` as it is now; check_expected() fails unless it is arrays[ipu]."""
        self.expected.append((name, self.get_later(name, list(arrays)), arrays))

    def check_expected(self) -> None:
        """Every expect() and pipeline send since the last check found, bit for bit, what the step continued with."""
        expected, self.expected = self.expected, []
        for name, later, arrays in expected:
            got = later()
            for ipu, want in arrays.items():
                if not same_bits(got[ipu], want):
                    raise DataPathMismatch(f"IPU {ipu} holds other values of {name!r} than the step continued with")

    def get_later(self, name: str, ipus: Sequence[int]) -> Callable[[], dict[int, np.ndarray]]:
        """get() of the tensors as they are now, returned when called: reads made together wait together."""
        return self.transport.get_tensors_later(name, list(ipus))

    def offload(self, name: str) -> None:
        """Move `name` of every IPU to Streaming Memory (the machines' DRAM; uncharged: the caller prices the step's
        streaming, hardware/streaming_cost.py duplex_s)."""
        self.transport.offload(name, self.ipus)

    def load(self, name: str) -> None:
        self.transport.load(name, self.ipus)

    def reserve(self, name: str, sizes: dict[int, int]) -> None:
        """Hold sizes[ipu] bytes of SRAM on each IPU under `name`, no data (buffers the driver keeps)."""
        self.transport.reserve(name, sizes)
        self.held.update((ipu, name) for ipu in sizes)

    def hold(self, name: str, held: dict[int, tuple[int, int]]) -> None:
        """Tell the machines what each IPU holds on the Pod: held[ipu] = (SRAM peak, Streaming Memory) of the last
        step, the figures they then report (Machine.hold); freed by free_all(). Without machines (LocalTransport)
        the controller reports the step reports themselves."""
        self.transport.hold(name, held)
        self.held.update((ipu, name) for ipu in held)

    def free(self, held: list[tuple[int, str]]) -> None:
        """Free these (IPU, tensor) of the job's, best effort."""
        free_each(self.transport, held)
        self.held.difference_update(held)

    def free_all(self) -> None:
        """Free every tensor the job put (best effort: a machine that is gone has nothing left to free)."""
        free_each(self.transport, self.held)
        self.held.clear()

    def ipu(self, replica: int, stage: int, shard_index: int) -> int:
        return self.first + (replica * self.p + stage) * self.t + shard_index

    @property
    def ipus(self) -> list[int]:
        return list(self.partition.ipus)

    def stage_ipus(self, replica: int, stage: int) -> list[int]:
        first = self.ipu(replica, stage, 0)
        return list(range(first, first + self.t))

    def _block(self, first: int, size: int) -> Group:
        """Group.block, made once per job: its members and hash are then computed once too."""
        group = self._groups.get((first, size))
        if group is None:
            group = self._groups[(first, size)] = Group.block(self.topology, first, size)
        return group

    def tensor_group(self, replica: int, stage: int) -> Group:
        return self._block(self.ipu(replica, stage, 0), self.t)

    def replica_group(self, replica: int) -> Group:
        return self._block(self.ipu(replica, 0, 0), self.t * self.p)

    def _done(self, kind: str, result: CollectiveResult, times: int = 1) -> float:
        self.log.append((kind, result, times))
        return result.virtual_s

    def _exchange(self, name: str, arrays: dict[int, np.ndarray], stacked: int,
                  run: Callable[..., CollectiveResult]) -> tuple[dict[int, np.ndarray], float]:
        """A tensor-parallel collective the stage needs the result of at once: `arrays` put as `name`, run(transport)
        on them (_moved), the results read back. With a mirror the step does not wait for the machines: the same
        schedule runs on the mirror too, the step goes on with the mirror's results, and check_expected() compares
        them, bit for bit, with what the machines computed (as a pipeline send's, Fabric.send)."""
        ipus = list(arrays)
        self.put(name, arrays)
        seconds = self._moved(TP, stacked, run)
        if self.mirror is None:
            return self.get(name, ipus), seconds
        self.mirror.put_tensors(name, arrays)
        run(Tiled(Unrecorded(self.mirror), stacked, self._tiled) if stacked > 1 else Unrecorded(self.mirror))
        got = self.mirror.get_tensors(name, ipus)
        self.expect(name, got)
        return {ipu: a.copy() for ipu, a in got.items()}, seconds

    def _moved(self, kind: str, stacked: int, run: Callable[[Transport], CollectiveResult]) -> float:
        """Run a collective (run(transport) moves and records it) and log it. With `stacked` micro-batches' values
        in the tensor (work.StageGroup), one micro-batch's schedule runs on all of them at once (Tiled: each element
        summed in the same order as one by one), and is logged and recorded once per micro-batch."""
        if stacked == 1:
            return self._done(kind, run(self.transport))
        return self._done(kind, run(Tiled(self.transport, stacked, self._tiled)), stacked)

    # --- tensor parallel --------------------------------------------------------------------------------------
    def allreduce(self, group: Group, parts: list[np.ndarray], stacked: int = 1) -> tuple[list[np.ndarray], float]:
        """Every shard gets the sum of the shards' `parts` (same shape each; `stacked` micro-batches': _moved)."""
        if group.size == 1:
            return parts, 0.0
        got, seconds = self._exchange("tp", dict(zip(group.ipus, parts)), stacked,
                                      lambda transport: allreduce(group, "tp", transport))
        return [got[ipu] for ipu in group.ipus], seconds

    def all_gather(self, group: Group, pieces: list[np.ndarray], axis: int,
                   stacked: int = 1) -> tuple[list[np.ndarray], float]:
        """Every shard gets the shards' `pieces` concatenated along `axis` (piece k from shard k)."""
        if group.size == 1:
            return pieces, 0.0
        t, axis = group.size, 1 + axis % pieces[0].ndim  # axis: of each micro-batch, a block of its own (Tiled)
        front = [np.moveaxis(x.reshape(stacked, -1, *x.shape[1:]), axis, 1) for x in pieces]
        n = front[0].shape[1] * t
        buffers = {}
        for k, (ipu, x) in enumerate(zip(group.ipus, front)):
            buf = np.zeros((stacked, n, *x.shape[2:]), dtype=x.dtype)
            buf[:, n * k // t:n * (k + 1) // t] = x  # rows of shard k: exactly the fabric's flat shard k
            buffers[ipu] = buf
        got, seconds = self._exchange("tp.gather", buffers, stacked,
                                      lambda transport: all_gather(group, "tp.gather", transport))
        out = [np.moveaxis(got[ipu], 1, axis) for ipu in group.ipus]
        return [x.reshape(-1, *x.shape[2:]) for x in out], seconds

    def allreduce_t2(self, replica: int, stage: int, parts: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """Two tensor-parallel axes: sum over each group of t2 adjacent shards, the groups at once."""
        out, seconds = [], 0.0
        for k in range(0, self.t, self.t2):
            group = Group.block(self.topology, self.ipu(replica, stage, k), self.t2)
            summed, took = self.allreduce(group, parts[k:k + self.t2])
            out, seconds = out + summed, max(seconds, took)
        return out, seconds

    def all_gather_t2(self, replica: int, stage: int, pieces: list[np.ndarray],
                      axis: int) -> tuple[list[np.ndarray], float]:
        out, seconds = [], 0.0
        for k in range(0, self.t, self.t2):
            group = Group.block(self.topology, self.ipu(replica, stage, k), self.t2)
            gathered, took = self.all_gather(group, pieces[k:k + self.t2], axis)
            out, seconds = out + gathered, max(seconds, took)
        return out, seconds

    def allreduce_t(self, replica: int, stage: int, parts: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """Two tensor-parallel axes: sum over each group of t shards t2 apart, the t2 groups at once."""
        if self.t1 == 1:
            return parts, 0.0
        if self.t2 == 1:
            return self.allreduce(self.tensor_group(replica, stage), parts)
        ipus = self.stage_ipus(replica, stage)
        groups = [ipus[k2::self.t2] for k2 in range(self.t2)]
        stage_block = Group.block(self.topology, ipus[0], self.t)
        got, seconds = self._exchange("tp", dict(zip(ipus, parts)), 1, lambda transport: on_groups(
            "allreduce", groups, "tp", transport, self.topology, stage_block))
        return [got[ipu] for ipu in ipus], seconds

    # --- pipeline ---------------------------------------------------------------------------------------------
    def send(self, replica: int, src_stage: int, dst_stage: int, arrays: list[np.ndarray],
             stacked: int = 1) -> tuple[Callable[[], list[np.ndarray]], float]:
        """Stage src's boundary tensor (one identical copy per shard) to stage dst's shards: shard k sends its k-th
        piece to shard k (the whole tensor when t = 1), then the receivers all-gather the pieces. Returns what
        stage dst receives, read when called (the transport's get_tensors_later: the next stage calls it)."""
        key = (replica, src_stage, dst_stage, arrays[0].shape, arrays[0].dtype, stacked)
        route = self._routes.get(key)
        srcs, dsts = route[0] if route else (self.stage_ipus(replica, src_stage), self.stage_ipus(replica, dst_stage))
        one = arrays[0].size // stacked  # a micro-batch's elements, a block of the flat tensor each (Tiled)
        receive = route[1] if route else np.zeros(arrays[0].shape, arrays[0].dtype)
        self.put("pp", {**dict(zip(srcs, arrays)), **dict.fromkeys(dsts, receive)})
        if route is None:  # a training loop sends the same shapes every step: their schedule is found once
            block = self.replica_group(replica)
            receive.flags.writeable = False  # put again and again, never written: each put copies it
            route = self._routes[key] = ((srcs, dsts), receive, shape_schedule(
                "send_recv", "pp", (tuple(srcs), tuple(dsts), one), lambda: [piece_sends(srcs, dsts, one, "scatter")],
                srcs[0], self.transport, self.topology, block.members))
        seconds = self._moved(PP, stacked, lambda transport: move("pp", route[2], transport))
        if self.t > 1:
            gather = self.tensor_group(replica, dst_stage)
            seconds += self._moved(PP, stacked, lambda transport: all_gather(gather, "pp", transport))
        whole = np.empty(arrays[0].shape, arrays[0].dtype)  # in C order, as the IPUs hold it
        blocks = whole.reshape(stacked, one)  # a micro-batch's elements each
        for k, array in enumerate(arrays):  # piece k as shard k scatters it, joined as the all-gather joins them
            lo, hi = shard(one, len(arrays), k)
            blocks[:, lo:hi] = array.reshape(stacked, one)[:, lo:hi]
        self.expect("pp", dict.fromkeys(dsts, whole))
        return lambda: [whole.copy() for _ in dsts], seconds

    # --- data parallel ----------------------------------------------------------------------------------------
    def replica_groups(self) -> list[tuple[int, ...]]:
        return [tuple(self.ipu(rep, s, k) for rep in range(self.r)) for s in range(self.p) for k in range(self.t)]

    def data_parallel_allreduce(self, name: str) -> float:
        """Sum `name` (already on every IPU) over the r replicas of each (stage, shard) position."""
        if self.r == 1:
            return 0.0
        return self._done(DP, on_groups("allreduce", self.replica_groups(), name, self.transport, self.topology,
                                        self.partition))

    def data_parallel_half(self, name: str, phase: str) -> float:
        """Replicated tensor sharding: "reduce-scatter" leaves replica i of each group the sum of shard i of
        `name` (group.shard(numel, r, i)); "all-gather" gives every replica every replica's shard. The same
        rings as data_parallel_allreduce, whose two halves these are."""
        if self.r == 1:
            return 0.0
        return self._done(DP, on_groups(phase.replace("-", "_"), self.replica_groups(), name, self.transport,
                                        self.topology, self.partition))


def owned(array: np.ndarray, dtype=DTYPE) -> np.ndarray:
    """`array` to update in place: as it is if the transport's get gave a writable copy of that dtype (the local
    transports do), else a copy (Ray's arrays are read-only views of its object store)."""
    if array.flags.writeable and array.flags.c_contiguous and (dtype is None or array.dtype == dtype):
        return array
    return np.array(array, dtype=dtype)
