"""What a program's session does between IPUs: collectives on groups of them, and pipeline sends from one stage's
IPUs to the next's (a mixin of DeviceSession, session.py, which holds the state these use).

Both run the built-in engine's schedules on the fabric (jobs/train/data_path.py: on_groups for collectives, whose
rings are the engine's data-parallel and tensor-parallel ones; piece_sends and an all-gather for a stage's send),
move the members' real data, and charge the engine's price: a sync across the partition, then the schedule's
alpha-beta time, on the members' clocks. A collective waits for every member's instance first (rendezvous.py); a
send does not wait for its receiver: its data waits on the receiving IPUs, and the receive takes it.
"""

from __future__ import annotations

import time
from typing import Mapping, Sequence

import numpy as np

from vipu.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument
from vipu.fabric import Group, broadcast, shard
from vipu.fabric.transfer_schedule import piece_sends
from vipu.jobs.train.data_path import DP, PP, TP, is_block, on_groups, run_schedule

OPS = ("allreduce", "reduce_scatter", "all_gather", "broadcast")
TIMEOUT_S = 120.0  # a wait for other instances (IPUOF_VIPU_API_TIMEOUT's default)


class Exchanges:
    def collective(self, op: str, name: str, groups: Sequence[Sequence[int]] | None,
                   tensors: Mapping[int, np.ndarray | None], sequence: int, root: int | None = None,
                   timeout_s: float = TIMEOUT_S) -> tuple[dict[int, np.ndarray], float]:
        """`op` on `name` inside each group at once (all groups the same size; rank i of a group is its i-th IPU
        in ascending order), tensors[ipu] being this caller's members' contributions (a broadcast's non-roots give
        None). With several instances, each gives its own members and the collective runs once all have: calls
        meet by (op, name, groups, sequence), the caller's count of such calls. Returns, for the caller's members:
        allreduce and broadcast the whole result, reduce_scatter the member's shard of the sum (flat), all_gather
        every member's piece, flattened, concatenated in rank order (flat); and the collective's virtual seconds."""
        if op not in OPS:
            raise InvalidArgument(f"collective {op!r}: give one of {', '.join(OPS)}")
        groups = [sorted(g) for g in groups] if groups else [sorted(tensors)]
        members = [ipu for g in groups for ipu in g]
        self._names(name, members)
        if len(set(members)) != len(members) or len({len(g) for g in groups}) != 1:
            raise InvalidArgument(f"{op} {name!r}: groups {groups} must not share an IPU and must be the same size")
        if not set(tensors) <= set(members) or not tensors:
            raise InvalidArgument(f"{op} {name!r}: contributions from IPUs {sorted(tensors)}, members {members}: give"
                                  " one for each member this instance drives")
        if op == "broadcast" and (len(groups) != 1 or root not in members):
            raise InvalidArgument(f"broadcast {name!r}: give one group and a root among its IPUs {members}")
        key = (op, name, tuple(map(tuple, groups)), int(sequence))
        got, seconds = self.rendezvous.meet(key, frozenset(members), dict(tensors),
                                            lambda all_: self._collective(op, name, groups, all_, root), timeout_s,
                                            f"{op} {name!r} #{sequence}")
        return {ipu: got[ipu] for ipu in tensors}, seconds

    def _collective(self, op: str, name: str, groups: list[list[int]], given: dict,
                    root: int | None) -> tuple[dict, float]:
        members = [ipu for g in groups for ipu in g]
        arrays, shapes = self._buffers(op, name, groups, given, root)
        with self._op():
            self._room(sum(a.nbytes for a in arrays.values()) - self._data_bytes((self._ipu(i), name) for i in arrays),
                       f"{op} {name!r}")
            machines = self._machines()
            pod_groups = [[self._ipu(ipu) for ipu in g] for g in groups]
            for ipu, array in arrays.items():
                machines.put_tensor(self._ipu(ipu), name, array)
                self._placed(self._ipu(ipu), name, "sram", array.nbytes)
            if op == "broadcast" and is_block(self.topology, pod_groups[0]):
                result = broadcast(Group.block(self.topology, pod_groups[0][0], len(members)), self._ipu(root), name,
                                   machines)
            else:  # a broadcast among IPUs that are no aligned block: the allreduce of the root's tensor with zeros
                result = on_groups("allreduce" if op == "broadcast" else op, pod_groups, name, machines,
                                   self.topology, self.group)
            kind = TP if all(len({self._replica(i) for i in g}) == 1 for g in pod_groups) else DP
            self.clocks.collective([i for g in pod_groups for i in g], result.virtual_s, self.sync_s, kind)
            self._log.append((kind, result))
            got = machines.get_tensors(name, [self._ipu(ipu) for ipu in members])
        out = {}
        for g in groups:
            for rank, ipu in enumerate(g):
                value = got[self._ipu(ipu)].reshape(-1)
                if op == "reduce_scatter":
                    value = value[slice(*shard(value.size, len(g), rank))]
                out[ipu] = value.reshape(shapes[ipu]) if op in ("allreduce", "broadcast") else value
        return out, result.virtual_s

    @staticmethod
    def _buffers(op: str, name: str, groups: list[list[int]], given: dict, root: int | None):
        """What each member's IPU gets before the collective, and the shape its result takes."""
        what = f"{op} {name!r}"
        if op == "broadcast":
            if given.get(root) is None:
                raise InvalidArgument(f"{what}: the root, IPU {root}, gave no tensor; give the root's tensor")
            value = np.asarray(given[root])
            return ({ipu: value if ipu == root else np.zeros_like(value) for g in groups for ipu in g},
                    {ipu: value.shape for g in groups for ipu in g})
        arrays = {ipu: np.asarray(a) if a is not None else None for ipu, a in given.items()}
        missing = sorted(ipu for ipu, a in arrays.items() if a is None)
        if missing:
            raise InvalidArgument(f"{what}: IPUs {missing} gave no tensor; every member gives one")
        if op != "all_gather":
            kinds = {(a.shape, a.dtype.str) for a in arrays.values()}
            if len(kinds) != 1:
                raise InvalidArgument(f"{what}: the members' tensors differ in shape or dtype ({sorted(kinds)}); give"
                                      " every member a tensor of the same shape and dtype")
            return arrays, {ipu: a.shape for ipu, a in arrays.items()}
        sizes = {(a.size, a.dtype.str) for a in arrays.values()}
        if len(sizes) != 1:
            raise InvalidArgument(f"{what}: the members' pieces differ in size or dtype ({sorted(sizes)}); give"
                                  " every member a piece of the same size and dtype")
        buffers = {}
        for g in groups:
            for rank, ipu in enumerate(g):
                piece = arrays[ipu].reshape(-1)
                buffer = np.zeros(piece.size * len(g), dtype=piece.dtype)
                buffer[rank * piece.size:(rank + 1) * piece.size] = piece  # exactly the fabric's shard `rank`
                buffers[ipu] = buffer
        return buffers, {ipu: b.shape for ipu, b in buffers.items()}

    def send(self, name: str, tensors: Mapping[int, np.ndarray], dst: Sequence[int], sequence: int) -> float:
        """A pipeline send: tensors[src] from each source IPU to the destination IPUs, source k to destination k.
        With one source its whole tensor goes; with t (a tensor-parallel stage, each source holding the whole
        tensor) source k sends its k-th piece and the destinations all-gather them (Megatron's scatter-gather).
        The senders wait for it all (it ends their operation); the data waits on the destinations for recv()."""
        src = list(tensors)
        dst = list(dst)
        what = f"send {name!r} #{sequence}"
        pod_src, pod_dst = self._names(name, src), self._names(name, dst)
        if len(src) != len(dst) or len(set(src + dst)) != 2 * len(src):
            raise InvalidArgument(f"{what}: from IPUs {src} to IPUs {dst}: give as many destinations as sources,"
                                  " all different")
        if len(src) > 1 and (src != sorted(src) or dst != sorted(dst)):
            raise InvalidArgument(f"{what}: give a stage's IPUs in ascending order (piece k goes to the k-th)")
        arrays = [np.asarray(a) for a in tensors.values()]
        if len({(a.shape, a.dtype.str) for a in arrays}) != 1:
            raise InvalidArgument(f"{what}: the sources' tensors differ in shape or dtype; each source holds the same"
                                  " tensor")
        message = f"{name}#{sequence}"
        with self._op():
            self._room(arrays[0].nbytes * (len(pod_src) + len(pod_dst)), what)
            machines = self._machines()
            for ipu, array in [*zip(pod_src, arrays), *((d, np.zeros_like(arrays[0])) for d in pod_dst)]:
                machines.put_tensor(ipu, message, array)
                self._placed(ipu, message, "sram", array.nbytes)
            result = run_schedule("send_recv", message, [piece_sends(pod_src, pod_dst, arrays[0].size, "scatter")],
                                  machines, self.topology, self._within(pod_src + pod_dst))
            self._log.append((PP, result))
            seconds = result.virtual_s
            if len(src) > 1:
                gathered = on_groups("all_gather", [pod_dst], message, machines, self.topology, self.group)
                self._log.append((PP, gathered))
                seconds += gathered.virtual_s
            for ipu in pod_src:
                machines.free_tensor(ipu, message)
                self._dropped(ipu, message)
            arrival = self.clocks.collective(pod_src, seconds, self.sync_s, PP)
            self._mail[(tuple(src), tuple(dst), int(sequence), name)] = (arrival, message, arrays[0].shape)
            self._arrived.notify_all()
        return seconds

    def _within(self, ipus: list[int]) -> frozenset[int]:
        """Where a send's routes may go: its replica's IPUs when it stays in one replica (the engine's), else the
        partition's."""
        replicas = {self._replica(ipu) for ipu in ipus}
        if len(replicas) != 1:
            return self.group.members
        start = self.first + replicas.pop() * self.ipus_per_replica
        return frozenset(range(start, start + self.ipus_per_replica))

    def recv(self, name: str, src: Sequence[int], dst: Sequence[int], sequence: int,
             timeout_s: float = TIMEOUT_S) -> dict[int, np.ndarray]:
        """What send() sent from `src` to `dst` under that name and sequence, once it is there; the receiving
        IPUs go on no earlier than it arrived."""
        key = (tuple(src), tuple(dst), int(sequence), name)
        pod = self._names(name, list(dst))
        deadline = time.monotonic() + timeout_s
        with self._arrived:
            while key not in self._mail:
                if self._closed is not None:
                    raise FailedPrecondition(self._closed)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeadlineExceeded(f"recv {name!r} #{sequence} on IPUs {list(dst)} from IPUs {list(src)}:"
                                           f" nothing was sent within {timeout_s:g} s; the sending instance must send"
                                           " to these IPUs in the same order (or give a longer timeout)")
                self._arrived.wait(min(left, 1.0))  # and look again: a close does not wait for the lock
            arrival, message, shape = self._mail.pop(key)
            with self._op():
                machines = self._machines()
                got = machines.get_tensors(message, pod)
                for ipu in pod:
                    machines.free_tensor(ipu, message)
                    self._dropped(ipu, message)
                self.clocks.receive(pod, arrival)
        return {ipu: got[p].reshape(shape) for ipu, p in zip(dst, pod)}
