"""Device: a program's partition of emulated IPUs, as one instance of the program sees it (vipu.sdk.attach()).

What it does, each a call to the controller's DeviceService (protos/vipu/v1/device.proto), which holds the run's
session: place tensors on IPUs (tile SRAM or Streaming Memory), read and free them, move them to and from Streaming
Memory, reserve SRAM; run compute sets; run collectives on groups of IPUs and pipeline sends; report steps. The
program computes in numpy on the host, playing its IPUs' tiles; what passes between IPUs goes through the
controller's fabric (real data over the emulated IPU-Links and GW-Links) and every operation is charged virtual time
by the Pod's cost model. IPUs are the partition's, 0 to size - 1; a replica is ipus_per_replica consecutive IPUs.

Several instances (a launcher's): each drives the IPUs of its own replicas and calls the same collectives in the same
order; a call meets the others' by its operation, tensor name, groups and how many such calls this instance made
before (its sequence), and runs once every member IPU's contribution is in.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np

from vipu.errors import InvalidArgument
from vipu.sdk import popdist
from vipu.sdk.device_channel import MAX_CALL_BYTES, Connection, from_environment
from vipu.sdk.wire import from_wire, to_wire
from vipu.v1 import device_pb2 as d
from vipu.v1 import device_pb2_grpc

Tensors = Mapping[int, np.ndarray]
OPS = {"allreduce": d.ALLREDUCE, "reduce_scatter": d.REDUCE_SCATTER, "all_gather": d.ALL_GATHER,
       "broadcast": d.BROADCAST}


def attach(ipus_per_replica: int | None = None) -> Device:
    """Attach this instance of the program to its run's IPUs, from its job's environment (VIPU_DEVICE_ADDRESS,
    VIPU_RUN_TOKEN) and PopDist's (its replicas).

    Which replicas, by one rule (vipu/sdk/popdist.py): with a launcher, PopDist's functions say it and the Device
    takes their values (a different `ipus_per_replica` is refused). Without one, PopDist's functions give PopDist's
    defaults (isPopdistEnvSet() False) and the program is one instance, as getNumInstances() and getInstanceIndex()
    say, running every replica of the partition: `ipus_per_replica` says how many IPUs a replica has (a pipeline's
    or tensor-parallel model's: all of a replica's stages and shards), and the Device's num_replicas and
    ipus_per_replica are the program's own replication, as PopTorch's replicationFactor is without poprun. The one
    variable both read without a launcher is POPDIST_NUM_IPUS_PER_REPLICA: set alone, it is the replica size for
    getNumIpusPerReplica() and attach() alike, and a different `ipus_per_replica` is refused."""
    launched = popdist.isPopdistEnvSet()
    per = popdist.getNumIpusPerReplica()
    if ipus_per_replica is not None and ipus_per_replica < 1:
        raise InvalidArgument(f"attach(ipus_per_replica={ipus_per_replica}): give 1 or more IPUs a replica")
    if ipus_per_replica is not None and ipus_per_replica != per and (launched or popdist.PER_REPLICA in os.environ):
        raise InvalidArgument(f"attach(ipus_per_replica={ipus_per_replica}), but {popdist.PER_REPLICA} is {per};"
                              " give the launcher's replica size (or leave it out)")
    per = ipus_per_replica or per
    from_environment("VIPU_PARTITION_IPUS")  # (unset: not a job's run, said as for the address)
    partition_ipus = popdist.number("VIPU_PARTITION_IPUS", 1)
    if partition_ipus % per:
        raise InvalidArgument(f"{per} IPUs per replica do not divide the partition's {partition_ipus} IPUs; give a"
                              " replica size that does")
    if launched:
        view = (popdist.getNumInstances(), popdist.getInstanceIndex(), popdist.getNumTotalReplicas(),
                popdist.getReplicaIndexOffset(), popdist.getNumLocalReplicas())
        if view[2] * per != partition_ipus:
            raise InvalidArgument(f"{popdist.TOTAL} {view[2]} x {popdist.PER_REPLICA} {per} is not the partition's"
                                  f" {partition_ipus} IPUs (VIPU_PARTITION_IPUS); start the program with poprun, which"
                                  " sets them to fit")
    else:
        view = (1, 0, partition_ipus // per, 0, partition_ipus // per)
    connection = Connection(from_environment("VIPU_DEVICE_ADDRESS"), from_environment("VIPU_RUN_TOKEN"),
                            os.environ.get("VIPU_DEVICE_CERT"))
    return Device(connection, per, *view)


class Device:
    def __init__(self, connection: Connection, ipus_per_replica: int, num_instances: int, instance_index: int,
                 num_replicas: int, replica_offset: int, local_replicas: int):
        self._conn = connection
        self._stub = device_pb2_grpc.DeviceServiceStub(connection.channel)
        self.ipus_per_replica, self.num_instances, self.instance_index = ipus_per_replica, num_instances, instance_index
        self.num_replicas, self.replica_offset, self.local_replicas = num_replicas, replica_offset, local_replicas
        self._sequences: dict[tuple, int] = defaultdict(int)  # how many calls of each kind this instance made
        self._wait_s = float(os.environ.get("IPUOF_VIPU_API_TIMEOUT", "120"))
        info = self._call("Attach", d.AttachRequest(instance_index=instance_index, num_instances=num_instances,
                                                    ipus_per_replica=ipus_per_replica))
        self.partition, self.size, self.first_ipu, self.pod = info.partition, info.size, info.first_ipu, info.pod
        self.ipus_per_machine, self.tiles_per_ipu = info.ipus_per_machine, info.tiles_per_ipu
        self.sram_bytes_per_ipu = info.sram_bytes_per_ipu
        self.streaming_memory_bytes_per_machine = info.streaming_memory_bytes_per_machine
        self.job_id, self.run = info.job_id, info.run

    def _call(self, method: str, request, wait: bool = False):
        return self._conn.call(getattr(self._stub, method), request, self._wait_s if wait else 0.0)

    def _next(self, *key) -> int:
        n = self._sequences[key]
        self._sequences[key] += 1
        return n

    # --- where things are ---------------------------------------------------------------------------------------
    @property
    def ipus(self) -> range:
        """The partition's IPUs."""
        return range(self.size)

    @property
    def replicas(self) -> range:
        """The replicas this instance runs (PopDist: offset to offset + local replicas)."""
        return range(self.replica_offset, self.replica_offset + self.local_replicas)

    def replica_ipus(self, replica: int) -> list[int]:
        """Replica `replica`'s IPUs: ipus_per_replica consecutive ones."""
        return list(range(replica * self.ipus_per_replica, (replica + 1) * self.ipus_per_replica))

    @property
    def local_ipus(self) -> list[int]:
        """The IPUs of this instance's replicas: the ones it drives."""
        return [ipu for replica in self.replicas for ipu in self.replica_ipus(replica)]

    def across_replicas(self) -> list[list[int]]:
        """The groups of a data-parallel collective: for each position in a replica, that IPU of every replica."""
        return [[r * self.ipus_per_replica + k for r in range(self.num_replicas)] for k in range(self.ipus_per_replica)]

    # --- tensors ------------------------------------------------------------------------------------------------
    def put(self, name: str, tensors: Tensors, memory: str = "sram") -> None:
        """Place tensors[ipu] on each IPU under `name` (replacing one of that name): in its tile SRAM, or with
        memory="streaming" straight in its machine's Streaming Memory. More than fits is refused (ResourceExhausted
        naming the IPU, the bytes asked and the bytes free)."""
        if memory not in ("sram", "streaming"):
            raise InvalidArgument(f"memory is {memory!r}; give sram or streaming")
        for ipu, array in tensors.items():
            nbytes = np.asarray(array).nbytes
            if memory == "sram" and nbytes > self.sram_bytes_per_ipu:  # it can never fit: the IPU says so (its
                self.reserve(name, {ipu: nbytes})  # free bytes too) without the bytes crossing the wire first
        self._call("PutTensors", d.PutTensorsRequest(
            name=name, tensors=_wire(tensors), memory=d.STREAMING if memory == "streaming" else d.SRAM))

    def get(self, name: str, ipus: Sequence[int]) -> dict[int, np.ndarray]:
        """A copy of `name` from each IPU's SRAM."""
        return _arrays(self._call("GetTensors", d.TensorsRequest(name=name, ipus=_ipus(ipus))).tensors)

    def free(self, name: str, ipus: Sequence[int]) -> None:
        self._call("FreeTensors", d.TensorsRequest(name=name, ipus=_ipus(ipus)))

    def offload(self, name: str, ipus: Sequence[int]) -> float:
        """Move `name` of each IPU from SRAM to Streaming Memory; returns the virtual seconds (one batch per
        machine)."""
        return self._call("Offload", d.TensorsRequest(name=name, ipus=_ipus(ipus))).virtual_s

    def load(self, name: str, ipus: Sequence[int]) -> float:
        """Move `name` of each IPU back from Streaming Memory onto its tiles; returns the virtual seconds."""
        return self._call("Load", d.TensorsRequest(name=name, ipus=_ipus(ipus))).virtual_s

    def reserve(self, name: str, nbytes: Mapping[int, int]) -> None:
        """Hold nbytes[ipu] bytes of each IPU's SRAM with no data: buffers the program keeps on the host (e.g.
        its activations) still count against the IPU's memory, as on the Pod."""
        self._call("Reserve", d.ReserveRequest(name=name,
                                               bytes={_ipu(i): _count(n, "bytes") for i, n in nbytes.items()}))

    # --- time -----------------------------------------------------------------------------------------------------
    def compute(self, flops: Mapping[int, float], dtype: str = "fp16",
                cycles: Mapping[int, float] | None = None) -> float:
        """One BSP compute set: flops[ipu] FLOPs on each IPU (spread over its tiles, at the calibrated share of
        the IPU's peak rate for `dtype`), and cycles[ipu] tile cycles of vector work (spread over its tiles too,
        e.g. attention's softmax); its IPUs then sync. Returns its virtual seconds. The arithmetic itself is the
        program's, in numpy: this charges its time."""
        return self._call("RunComputeSet", d.ComputeSetRequest(
            flops={_ipu(i): float(n) for i, n in flops.items()}, dtype=dtype,
            vector_cycles={_ipu(i): float(n) for i, n in (cycles or {}).items()})).virtual_s

    def shard_group(self, ipus: Sequence[int], dtype: str = "fp32"):
        """The IPUs of one pipeline stage of one replica as the stage code sees them (vipu.sdk.ShardGroup)."""
        from vipu.sdk.shard_group import ShardGroup

        return ShardGroup(self, list(ipus), dtype)

    # --- collectives ----------------------------------------------------------------------------------------------
    def allreduce(self, tensors: Tensors, group=None, *, name: str = "allreduce") -> dict[int, np.ndarray]:
        """Every member gets the sum over its group of the members' tensors (same shape and dtype each).
        `group`: one group of IPUs, or several of the same size run at once (e.g. across_replicas()); default: the
        IPUs of `tensors`. With several instances each gives only the members it drives."""
        return self._collective("allreduce", tensors, group, name)[0]

    def reduce_scatter(self, tensors: Tensors, group=None, *, name: str = "reduce_scatter") -> dict[int, np.ndarray]:
        """Rank i of a group (its i-th IPU, ascending) gets shard i of the sum, flat: elements [n i / g, n (i+1) / g)
        of the n summed."""
        return self._collective("reduce_scatter", tensors, group, name)[0]

    def all_gather(self, tensors: Tensors, group=None, *, axis: int = 0,
                   name: str = "all_gather") -> dict[int, np.ndarray]:
        """Every member gets the members' tensors concatenated along `axis`, in rank order (ascending IPUs)."""
        fronts = {ipu: np.ascontiguousarray(np.moveaxis(np.asarray(a), axis, 0)) for ipu, a in tensors.items()}
        got, groups = self._collective("all_gather", fronts, group, name)
        size = {ipu: len(g) for g in groups for ipu in g}
        return {ipu: np.moveaxis(flat.reshape(size[ipu] * fronts[ipu].shape[0], *fronts[ipu].shape[1:]), 0, axis)
                for ipu, flat in got.items()}

    def broadcast(self, tensors: Mapping[int, np.ndarray | None], root: int, group=None, *,
                  name: str = "broadcast") -> dict[int, np.ndarray]:
        """Every member gets the root's tensor; the others give None (they take part, and receive)."""
        return self._collective("broadcast", tensors, group, name, root)[0]

    def _collective(self, op: str, tensors, group, name: str, root: int | None = None):
        groups = _groups(group, tensors)
        sequence = self._next(op, name, tuple(map(tuple, groups)))
        request = d.CollectiveRequest(op=OPS[op], name=name, groups=[d.Group(ipus=g) for g in groups],
                                      tensors=_wire(tensors), root=_ipu(root or 0), sequence=sequence,
                                      timeout_s=self._wait_s)
        reply = self._call("Collective", request, wait=True)
        return _arrays(reply.tensors), groups

    # --- pipelines ----------------------------------------------------------------------------------------------
    def send(self, tensors: Tensors, dst: Sequence[int], *, name: str = "send") -> float:
        """Send a stage's tensor to the next stage's IPUs: tensors[src] from each source to the destination in the
        same place (with t sources, a tensor-parallel stage each holding the whole tensor, source k sends its k-th
        piece and the destinations all-gather them). The senders are charged; returns the virtual seconds."""
        src = list(tensors)
        sequence = self._next("send", name, tuple(src), tuple(dst))
        return self._call("Send", d.SendRequest(name=name, tensors=_wire(tensors), dst=_ipus(dst),
                                                sequence=sequence)).virtual_s

    def recv(self, src: Sequence[int], dst: Sequence[int], *, name: str = "send") -> dict[int, np.ndarray]:
        """What `src` sent to `dst` (in order), once it is there; the receiving IPUs go on no earlier than it
        arrived in virtual time (a pipeline stage waiting for its input: the bubble)."""
        sequence = self._next("recv", name, tuple(src), tuple(dst))
        return _arrays(self._call("Recv", d.RecvRequest(name=name, src=_ipus(src), dst=_ipus(dst), sequence=sequence,
                                                        timeout_s=self._wait_s), wait=True).tensors)

    # --- steps ----------------------------------------------------------------------------------------------------
    def report_step(self, loss) -> dict:
        """End a step: `loss` is this instance's samples' losses (an array, in its replicas' sample order) or one
        loss. Every instance reports each step; the step's report (the mean loss over every instance's samples, its
        emulated time and parts, per-IPU utilisation and SRAM, link bytes) is returned to each, and becomes the
        run's progress: `vipu logs`, `vipu show job`, `vipu top` and the metrics show it."""
        losses = np.asarray(loss)
        step = self._next("step")
        reply = self._call("ReportStep", d.ReportStepRequest(instance_index=self.instance_index, step=step,
                                                             losses=to_wire(losses.reshape(-1)),
                                                             timeout_s=self._wait_s), wait=True)
        return json.loads(reply.report_json)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *_) -> None:
        self.close()


def _wire(tensors: Mapping[int, np.ndarray | None]) -> list[d.IpuArray]:
    total = sum(np.asarray(a).nbytes for a in tensors.values() if a is not None)
    if total > MAX_CALL_BYTES:  # refused now, not by gRPC once the bytes are copied (a minute on a busy machine)
        raise InvalidArgument(f"{total:,} bytes of arrays in one call; at most {MAX_CALL_BYTES:,} (1 GiB) go in one:"
                              " split the tensor into parts under names of their own, or give fewer IPUs a call")
    return [d.IpuArray(ipu=_ipu(ipu)) if a is None else d.IpuArray(ipu=_ipu(ipu), array=to_wire(a))
            for ipu, a in tensors.items()]


def _ipu(ipu) -> int:
    """An IPU number as the wire carries it (uint32): a negative one refused naming it, not by protobuf's "Value
    out of range"."""
    return _count(ipu, "IPU")


def _ipus(ipus) -> list[int]:
    return [_ipu(i) for i in ipus]


def _count(value, what: str) -> int:
    """A whole number the wire carries unsigned (an IPU: uint32, bytes: uint64), refused outside its range."""
    number = int(value)
    bits, fix = (32, "give 0 to the partition's size - 1 (Device.size)") if what == "IPU" else (
        64, "give 0 to the IPU's SRAM (Device.sram_bytes_per_ipu)")
    if not 0 <= number < 1 << bits:
        raise InvalidArgument(f"{what} {number} is {'negative' if number < 0 else 'too large'}; {fix}")
    return number


def _arrays(items) -> dict[int, np.ndarray]:
    return {t.ipu: from_wire(t.array) for t in items}


def _groups(group, tensors) -> list[list[int]]:
    """One group (a list of IPUs) or several (a list of lists), as lists of ints; None: the tensors' IPUs."""
    if group is None:
        return [sorted(_ipus(tensors))]
    group = list(group)
    if group and all(isinstance(g, (int, np.integer)) for g in group):
        return [sorted(_ipus(group))]
    return [sorted(_ipus(g)) for g in group]
