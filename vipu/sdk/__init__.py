"""vipu.sdk: the public SDK a user's program, running as a job on the emulated Pod, imports.

    import vipu.sdk as ipu

    device = ipu.attach()                    # this instance's view of its partition's IPUs
    device.put("w", {0: w0, 1: w1})           # tile SRAM (memory="streaming": Streaming Memory)
    device.compute({0: 2e9, 1: 2e9}, "fp16")  # a BSP compute set, charged virtual time
    summed = device.allreduce(grads, device.across_replicas())
    device.report_step(losses)                # shown by vipu logs, vipu show job, vipu top, the metrics

PopDist's functions, with PopDist's names: getNumInstances, getInstanceIndex, getLocalInstanceIndex,
getNumTotalReplicas, getReplicaIndexOffset, getNumLocalReplicas, getNumIpusPerReplica, isPopdistEnvSet (what a
launcher said, else PopDist's defaults: vipu/sdk/popdist.py says the rule attach() shares). The model building
blocks the built-in `train` workload runs are in vipu.sdk.nn. The errors are vipu.errors' (InvalidArgument,
ResourceExhausted, DeadlineExceeded, ...), with the controller's messages. docs/sdk.md says what a program can and
cannot do.

Why the rest loads on first use: importing this module must stay cheap (a program that only reads PopDist's
variables pays for no channel), and numpy and grpc come with attach().
"""

from __future__ import annotations

import importlib

from vipu.errors import (AlreadyExists, DeadlineExceeded, FailedPrecondition, InvalidArgument, NotFound,
                         PermissionDenied, ResourceExhausted, Unauthenticated, Unavailable, VipuError)
from vipu.sdk.popdist import (getInstanceIndex, getLocalInstanceIndex, getNumInstances, getNumIpusPerReplica,
                              getNumLocalReplicas, getNumTotalReplicas, getReplicaIndexOffset, isPopdistEnvSet)

_HOMES = {"attach": "device", "Device": "device", "ShardGroup": "shard_group"}


def __getattr__(name: str):
    if name not in _HOMES:  # a submodule (`vipu.sdk.nn`) is then imported by the import system
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


__all__ = [
    "AlreadyExists", "DeadlineExceeded", "Device", "FailedPrecondition", "InvalidArgument", "NotFound",
    "PermissionDenied", "ResourceExhausted", "ShardGroup", "Unauthenticated", "Unavailable", "VipuError", "attach",
    "getInstanceIndex", "getLocalInstanceIndex", "getNumInstances", "getNumIpusPerReplica", "getNumLocalReplicas",
    "getNumTotalReplicas", "getReplicaIndexOffset", "isPopdistEnvSet",
]
