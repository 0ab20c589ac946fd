"""PopDist's functions, with PopDist's names: which replicas this instance of the program runs.

poprun starts a program's instances with POPDIST_* variables (vipu.md, "The job's environment contract"), and a
PopDist program reads them through these functions. As PopDist documents them, getNumInstances() and
getInstanceIndex() are derived, for a uniform number of replicas per instance: instances = total / local replicas,
index = offset / local replicas (jobs/train/poprun.py reads the same variables the same way for built-in training).

Without a launcher (a batch script that runs `python prog.py` itself) there is one instance, running every replica
of the partition: VIPU_PARTITION_IPUS / getNumIpusPerReplica() of them, a replica being POPDIST_NUM_IPUS_PER_REPLICA
IPUs if that alone is set, else one (a model-parallel program says its replica size to vipu.sdk.attach instead).
A variable that is set but malformed is refused, naming it: nothing falls back silently.
"""

from __future__ import annotations

import os

from vipu.errors import InvalidArgument

TOTAL, PER_REPLICA, LOCAL, OFFSET = ("POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_IPUS_PER_REPLICA",
                                     "POPDIST_NUM_LOCAL_REPLICAS", "POPDIST_REPLICA_INDEX_OFFSET")


def _number(name: str, default: int | None = None, minimum: int = 1) -> int:
    raw = os.environ.get(name)
    if raw is None:
        if default is None:
            raise InvalidArgument(f"{name} is not set: this program is not running as a vipu job; submit it"
                                  " (vipu submit job.sh), whose run sets it")
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
    return _number(PER_REPLICA, 1)


def getNumTotalReplicas() -> int:  # noqa: N802
    if isPopdistEnvSet():
        return _number(TOTAL)
    ipus, per = _number("VIPU_PARTITION_IPUS"), getNumIpusPerReplica()
    if ipus % per:
        raise InvalidArgument(f"{PER_REPLICA} is {per}, which does not divide the partition's {ipus} IPUs"
                              " (VIPU_PARTITION_IPUS); give a replica size that does")
    return ipus // per


def getNumLocalReplicas() -> int:  # noqa: N802
    return _number(LOCAL) if isPopdistEnvSet() else getNumTotalReplicas()


def getReplicaIndexOffset() -> int:  # noqa: N802
    return _number(OFFSET, minimum=0) if isPopdistEnvSet() else 0


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
