"""PopDist's functions, with PopDist's names: which replicas this instance of the program runs.

poprun starts a program's instances with POPDIST_* variables (vipu.md, "The job's environment contract"), and a
PopDist program reads them through these functions. As PopDist documents them, getNumInstances() and
getInstanceIndex() are derived, for a uniform number of replicas per instance: instances = total / local replicas,
index = offset / local replicas (jobs/train/poprun.py reads the same variables the same way for built-in training).

The variables are the one source of truth, as in PopDist: these functions say what a launcher said and nothing
else. Without a launcher (a batch script that runs `python prog.py` itself, or outside a job) they give PopDist's
documented defaults: isPopdistEnvSet() False, 1 replica in all and locally, offset 0, 1 IPU per replica (or
POPDIST_NUM_IPUS_PER_REPLICA if that alone is set), so 1 instance, index 0, local index 0. A program without a
launcher is not distributed, and its replication is its own choice, as PopTorch's replicationFactor is without
poprun: vipu.sdk.attach(ipus_per_replica=N) makes it, and the Device it returns says it (num_replicas,
ipus_per_replica); under a launcher attach takes these functions' values, so the two always agree there.
A variable that is set but malformed is refused, naming it: nothing falls back silently.
"""

from __future__ import annotations

import os

from vipu.errors import InvalidArgument

TOTAL, PER_REPLICA, LOCAL, OFFSET = ("POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_IPUS_PER_REPLICA",
                                     "POPDIST_NUM_LOCAL_REPLICAS", "POPDIST_REPLICA_INDEX_OFFSET")
LOCAL_INDEX = "POPDIST_LOCAL_INSTANCE_INDEX"


def number(name: str, default: int, minimum: int = 1) -> int:
    """The whole number in the variable `name`, `default` if unset; InvalidArgument naming it if malformed."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgument(f"{name} is {raw!r}, not a whole number") from None
    if value < minimum:
        raise InvalidArgument(f"{name} is {value}; it must be at least {minimum}")
    return value


def isPopdistEnvSet() -> bool:  # noqa: N802 - PopDist's name
    """Whether a launcher (poprun) started this instance with PopDist's variables."""
    return TOTAL in os.environ


def getNumIpusPerReplica() -> int:  # noqa: N802
    return number(PER_REPLICA, 1)


def getNumTotalReplicas() -> int:  # noqa: N802
    return number(TOTAL, 1)


def getNumLocalReplicas() -> int:  # noqa: N802
    return number(LOCAL, 1)


def getReplicaIndexOffset() -> int:  # noqa: N802
    return number(OFFSET, 0, minimum=0)


def getLocalInstanceIndex() -> int:  # noqa: N802
    """This instance's index among those on its host (poprun --host numbers them per host)."""
    return number(LOCAL_INDEX, 0, minimum=0)


def getNumInstances() -> int:  # noqa: N802
    total, local = getNumTotalReplicas(), getNumLocalReplicas()
    if total % local:
        raise InvalidArgument(f"{TOTAL} {total} is not a multiple of {LOCAL} {local}: instances must run as many"
                              " replicas each (PopDist's uniform instances)")
    return total // local


def getInstanceIndex() -> int:  # noqa: N802
    offset, local = getReplicaIndexOffset(), getNumLocalReplicas()
    if offset % local or offset + local > getNumTotalReplicas():
        raise InvalidArgument(f"{OFFSET} {offset} with {LOCAL} {local} is not an instance's first replica of"
                              f" {getNumTotalReplicas()}; a launcher sets them together")
    return offset // local
