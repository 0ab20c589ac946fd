"""The environment a poprun job's instances see, and how a training worker reads it back (PopDist's rules).

What poprun forwards (vipu.md, "The job's environment contract"; the names are checked against poprun's own mpirun
command line in a Graphcore deployment log: `-x POPDIST_NUM_TOTAL_REPLICAS=16 -x POPDIST_NUM_IPUS_PER_REPLICA=4
-x POPDIST_NUM_LOCAL_REPLICAS=16 -x POPDIST_UNIFORM_REPLICAS_PER_INSTANCE=1 -x POPDIST_REPLICA_INDEX_OFFSET=0
-x POPDIST_LOCAL_INSTANCE_INDEX=0 -x IPUOF_VIPU_API_HOST=... -x IPUOF_VIPU_API_PORT=8090
-x IPUOF_VIPU_API_PARTITION_ID=... -x IPUOF_VIPU_API_TIMEOUT=120 -x IPUOF_VIPU_API_GCD_ID=0 -x IPUOF_LOG_LEVEL=WARN
-x POPLAR_TARGET_OPTIONS={...}`):

- the partition's IPUoF view (vipu/partition/ipuof.py): IPUOF_VIPU_API_HOST/PORT/PARTITION_ID/GCD_ID/TIMEOUT,
  IPUOF_LOG_LEVEL and POPLAR_TARGET_OPTIONS, the GCD being the one that holds the instance's IPUs;
- POPDIST_NUM_TOTAL_REPLICAS (r), POPDIST_NUM_IPUS_PER_REPLICA (t x p), POPDIST_NUM_LOCAL_REPLICAS (the replicas
  this instance runs), POPDIST_UNIFORM_REPLICAS_PER_INSTANCE (1: poprun divides the replicas evenly),
  POPDIST_REPLICA_INDEX_OFFSET (its first replica), POPDIST_LOCAL_INSTANCE_INDEX (its index among the instances on
  its host).

There is no POPDIST_NUM_INSTANCES or POPDIST_INSTANCE_INDEX: PopDist's API documents getNumInstances() and
getInstanceIndex() as usable "only with a uniform number of replicas per instance", i.e. derived: instances =
total / local replicas, index = offset / local replicas (Instance below does the same; so did Graphcore's own
PaddlePaddle BERT launcher: popdist_rank = POPDIST_REPLICA_INDEX_OFFSET // POPDIST_NUM_LOCAL_REPLICAS).

What an instance is here: one per IPU-Machine (Bow-2000, one Ray actor). poprun leaves the count to the user
(--num-instances, replicas divided evenly) and Graphcore's own runs vary (graphcore/examples: ResNet-50 on a Pod64
with 8, 16 or 32 instances for 64 replicas); one per machine is among them (PyTorch ResNet-50 Pod64
`--num-instances=16 --num-replicas=64` on 16 machines; EfficientNet-B0 "on 4 IPU-Ms (16 IPUs)" with
`--num-instances=4`; vision/cnns/pytorch/train/benchmarks.yml) and matches this emulator, where a machine is one
actor. A replica wider than a machine (t x p > 4) cannot be split between instances, so then it is one instance per
replica; a partition smaller than a machine is one instance. That also gives every IPU-Link domain of a multi-ILD
partition its own instances, which PopXL's guide requires ("at least one process per ILD"). All instances run in
the controller's process on this one host, so POPDIST_LOCAL_INSTANCE_INDEX is the instance index (poprun without
--host).

Outside a controller (tests, benchmarks) local_environments() gives the same variables for a stand-in partition
named "local" at poprun's defaults (--vipu-server-host localhost, --vipu-server-port 8090).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, Mapping, Sequence

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.partition import ipuof
from vipu.partition.partition_record import Partition
from vipu.partition.partition_states import PartitionState

IPUOF = ("IPUOF_VIPU_API_HOST", "IPUOF_VIPU_API_PORT", "IPUOF_VIPU_API_PARTITION_ID", "IPUOF_VIPU_API_GCD_ID",
         "IPUOF_VIPU_API_TIMEOUT", "IPUOF_LOG_LEVEL", "POPLAR_TARGET_OPTIONS")
POPDIST = ("POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_IPUS_PER_REPLICA", "POPDIST_NUM_LOCAL_REPLICAS",
           "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "POPDIST_REPLICA_INDEX_OFFSET", "POPDIST_LOCAL_INSTANCE_INDEX")
# what a worker cannot run without (IPUOF_VIPU_API_TIMEOUT and IPUOF_LOG_LEVEL have defaults in Poplar)
REQUIRED = ("IPUOF_VIPU_API_HOST", "IPUOF_VIPU_API_PORT", "IPUOF_VIPU_API_PARTITION_ID", "POPLAR_TARGET_OPTIONS",
            "POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_IPUS_PER_REPLICA", "POPDIST_NUM_LOCAL_REPLICAS",
            "POPDIST_REPLICA_INDEX_OFFSET")
LOCAL_HOST, LOCAL_PORT, LOCAL_PARTITION = "localhost", 8090, "local"  # poprun's defaults; a stand-in name


def num_instances(layout, pod: PodConfig) -> int:
    """Instances for a t x p x r layout: one per machine, or one per replica when a replica spans machines."""
    per_replica = layout.tp * layout.p
    per_instance = max(per_replica, min(pod.machine.ipus, layout.ipus))
    return layout.ipus // per_instance


def environments(layout, pod: PodConfig, first_ipu: int,
                 partition_env: Callable[[int], Mapping[str, str]]) -> list[dict[str, str]]:
    """The environment of each instance, in instance order. partition_env(ipu) is the IPUoF environment of the
    partition's GCD that holds `ipu` (ipuof.environment for that GCD)."""
    n = num_instances(layout, pod)
    local = layout.r // n
    per_replica = layout.tp * layout.p
    out = []
    for i in range(n):
        offset = i * local
        base = dict(partition_env(first_ipu + offset * per_replica))
        out.append({
            **{key: base[key] for key in IPUOF if key in base},
            "POPDIST_NUM_TOTAL_REPLICAS": str(layout.r),
            "POPDIST_NUM_IPUS_PER_REPLICA": str(per_replica),
            "POPDIST_NUM_LOCAL_REPLICAS": str(local),
            "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
            "POPDIST_REPLICA_INDEX_OFFSET": str(offset),
            "POPDIST_LOCAL_INSTANCE_INDEX": str(i),
        })
    return out


def partition_environments(partition: Partition, state, api_host: str, api_port: int,
                           layout) -> list[dict[str, str]]:
    """The instances' environments for a job on `partition` (what the live controller hands a train job)."""
    if layout.ipus != partition.size:
        raise InvalidArgument(f"the layout uses {layout.ipus} IPUs but partition {partition.name} has"
                              f" {partition.size}; t x p x r must equal the partition's size")

    def gcd_env(ipu: int) -> dict[str, str]:
        gcd = (ipu - partition.first_ipu) // partition.ipus_per_gcd
        return ipuof.environment(partition, state, api_host, api_port, gcd)

    return environments(layout, state.pod, partition.first_ipu, gcd_env)


def local_environments(layout, pod: PodConfig, first_ipu: int = 0) -> list[dict[str, str]]:
    """The same environments for a stand-in one-GCD partition "local" at poprun's default controller address."""
    stand_in = Partition(name=LOCAL_PARTITION, size=layout.ipus, num_gcds=1, gcd_sync_replicas=None,
                         reconfigurable=True, allocation="", cluster="", owner="", first_ipu=first_ipu,
                         state=PartitionState.ACTIVE, created_at=0.0, history=[])
    return partition_environments(stand_in, SimpleNamespace(pod=pod), LOCAL_HOST, LOCAL_PORT, layout)


@dataclass(frozen=True)
class Instance:
    """One instance's view of its environment, read as PopDist reads it."""

    env: Mapping[str, str]
    partition: str
    api_host: str
    api_port: int
    gcd: int
    target_options: Mapping[str, str]
    total_replicas: int
    ipus_per_replica: int
    local_replicas: int
    replica_offset: int
    local_instance_index: int

    @classmethod
    def from_env(cls, env: Mapping[str, str], where: str = "the instance's environment") -> Instance:
        """Fail fast, naming what is missing or malformed (a missing variable must never mean a silent fallback)."""
        missing = [key for key in REQUIRED if not env.get(key)]
        if missing:
            raise InvalidArgument(f"{where} lacks {', '.join(missing)}: a poprun instance needs them to reach its"
                                  " partition and to know its replicas; launch it through the controller (or"
                                  " poprun.local_environments)")

        def number(key: str, default: str | None = None, minimum: int = 0) -> int:
            raw = env.get(key, default)
            try:
                value = int(raw)
            except (TypeError, ValueError):
                raise InvalidArgument(f"{where}: {key} is {raw!r}, not a whole number") from None
            if value < minimum:
                raise InvalidArgument(f"{where}: {key} is {value}; it must be at least {minimum}")
            return value

        try:
            options = json.loads(env["POPLAR_TARGET_OPTIONS"])
        except json.JSONDecodeError as e:
            raise InvalidArgument(f"{where}: POPLAR_TARGET_OPTIONS is not JSON ({e})") from None
        if env.get("POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "1") != "1":
            raise InvalidArgument(f"{where}: POPDIST_UNIFORM_REPLICAS_PER_INSTANCE is"
                                  f" {env['POPDIST_UNIFORM_REPLICAS_PER_INSTANCE']!r}; only uniform instances"
                                  " (1) are supported, as PopDist's getInstanceIndex() requires")
        inst = cls(env=dict(env), partition=env["IPUOF_VIPU_API_PARTITION_ID"], api_host=env["IPUOF_VIPU_API_HOST"],
                   api_port=number("IPUOF_VIPU_API_PORT", minimum=1), gcd=number("IPUOF_VIPU_API_GCD_ID", "0"),
                   target_options=options, total_replicas=number("POPDIST_NUM_TOTAL_REPLICAS", minimum=1),
                   ipus_per_replica=number("POPDIST_NUM_IPUS_PER_REPLICA", minimum=1),
                   local_replicas=number("POPDIST_NUM_LOCAL_REPLICAS", minimum=1),
                   replica_offset=number("POPDIST_REPLICA_INDEX_OFFSET"),
                   local_instance_index=number("POPDIST_LOCAL_INSTANCE_INDEX", "0"))
        if inst.replica_offset + inst.local_replicas > inst.total_replicas:
            raise InvalidArgument(f"{where}: replicas {inst.replica_offset} to"
                                  f" {inst.replica_offset + inst.local_replicas - 1} (POPDIST_REPLICA_INDEX_OFFSET +"
                                  f" POPDIST_NUM_LOCAL_REPLICAS) go past POPDIST_NUM_TOTAL_REPLICAS"
                                  f" {inst.total_replicas}")
        if inst.total_replicas % inst.local_replicas or inst.replica_offset % inst.local_replicas:
            raise InvalidArgument(f"{where}: {inst.total_replicas} replicas are not divided evenly into instances of"
                                  f" {inst.local_replicas} at offset {inst.replica_offset}")
        return inst

    @property
    def replicas(self) -> range:
        """The replicas this instance runs (PopDist: offset to offset + local replicas)."""
        return range(self.replica_offset, self.replica_offset + self.local_replicas)

    @property
    def num_instances(self) -> int:  # popdist.getNumInstances()
        return self.total_replicas // self.local_replicas

    @property
    def instance_index(self) -> int:  # popdist.getInstanceIndex()
        return self.replica_offset // self.local_replicas


def read_instances(envs: Sequence[Mapping[str, str]], layout) -> list[Instance]:
    """Every instance's view, checked to describe one job of `layout` whose instances run each replica once;
    returned in replica order (the order the instances' results are combined in)."""
    if not envs:
        raise InvalidArgument("no instance environments: a job needs at least one poprun instance")
    return check_instances([Instance.from_env(env, f"instance {i}'s environment") for i, env in enumerate(envs)],
                           layout)


def check_instances(instances: Sequence[Instance], layout) -> list[Instance]:
    """The instances sorted by their first replica, checked to be one job of `layout` running each replica once."""
    if not instances:
        raise InvalidArgument("no instances: a job needs at least one poprun instance")
    first = instances[0]
    for i, inst in enumerate(instances):
        for name, want in (("POPDIST_NUM_TOTAL_REPLICAS", layout.r),
                           ("POPDIST_NUM_IPUS_PER_REPLICA", layout.tp * layout.p)):
            got = inst.total_replicas if name == "POPDIST_NUM_TOTAL_REPLICAS" else inst.ipus_per_replica
            if got != want:
                raise InvalidArgument(f"instance {i}'s environment: {name} is {got}, but the job's layout"
                                      f" ({layout.describe()}) needs {want}")
        if inst.partition != first.partition:
            raise InvalidArgument(f"instance {i}'s environment names partition {inst.partition}, instance 0's"
                                  f" {first.partition}: one job runs on one partition")
    instances = sorted(instances, key=lambda inst: inst.replica_offset)
    covered = [rep for inst in instances for rep in inst.replicas]
    if covered != list(range(layout.r)):
        raise InvalidArgument(f"the instances' replicas ({describe_replicas(instances)}) must cover replicas 0 to"
                              f" {layout.r - 1} once each; fix POPDIST_REPLICA_INDEX_OFFSET /"
                              " POPDIST_NUM_LOCAL_REPLICAS")
    return instances


def describe_replicas(instances: Sequence[Instance]) -> str:
    return ", ".join(f"{inst.replicas.start}-{inst.replicas.stop - 1}" for inst in instances)


def summary_lines(envs: Sequence[Mapping[str, str]], notes: Sequence[str] = ()) -> list[str]:
    """The environments as log lines: what every instance shares, then what each one has of its own, followed by
    notes[i] (e.g. the replicas it ran) when given."""
    if not envs:
        return []
    shared = {k: v for k, v in envs[0].items() if all(env.get(k) == v for env in envs)}
    lines = [f"poprun environment: {len(envs)} instance{'s' if len(envs) != 1 else ''}; every instance sees "
             + " ".join(f"{k}={v}" for k, v in shared.items())]
    for i, env in enumerate(envs):
        own = " ".join(f"{k}={v}" for k, v in env.items() if k not in shared)
        note = notes[i] if i < len(notes) else ""
        lines.append(" ".join(part for part in (f"  instance {i}:", own, note) if part))
    return lines
