"""PopDist's functions read a launcher's POPDIST_* variables as PopDist does (instances and the instance index
derived from the replicas); without a launcher, in a job or outside one, they give PopDist's defaults; a malformed
variable is refused naming it."""

from __future__ import annotations

import pytest

import vipu.sdk as ipu

LAUNCHED = {"POPDIST_NUM_TOTAL_REPLICAS": "8", "POPDIST_NUM_IPUS_PER_REPLICA": "2", "POPDIST_NUM_LOCAL_REPLICAS": "2",
            "POPDIST_REPLICA_INDEX_OFFSET": "4"}


@pytest.fixture
def env(monkeypatch):
    for name in [*LAUNCHED, "VIPU_PARTITION_IPUS", "POPDIST_LOCAL_INSTANCE_INDEX"]:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def view() -> tuple:
    return (ipu.isPopdistEnvSet(), ipu.getNumInstances(), ipu.getInstanceIndex(), ipu.getNumTotalReplicas(),
            ipu.getReplicaIndexOffset(), ipu.getNumLocalReplicas(), ipu.getNumIpusPerReplica(),
            ipu.getLocalInstanceIndex())


def test_a_launchers_variables_give_this_instances_replicas(env):
    for name, value in LAUNCHED.items():
        env.setenv(name, value)
    env.setenv("POPDIST_LOCAL_INSTANCE_INDEX", "0")  # poprun --host h0,h1: instance 2 is h1's first
    assert view() == (True, 4, 2, 8, 4, 2, 2, 0)


def test_without_a_launcher_popdists_defaults_in_a_job_or_outside_one(env):
    """As PopDist documents them: 1 replica in all and locally, offset 0, 1 IPU per replica, so 1 instance, index
    0, whatever the partition: a program that is not launched is not distributed (attach() makes its own
    replication: tests/sdk/test_device.py)."""
    assert view() == (False, 1, 0, 1, 0, 1, 1, 0)
    env.setenv("VIPU_PARTITION_IPUS", "16")
    assert view() == (False, 1, 0, 1, 0, 1, 1, 0)
    env.setenv("POPDIST_NUM_IPUS_PER_REPLICA", "4")  # read alone too, as PopDist reads it
    assert view() == (False, 1, 0, 1, 0, 1, 4, 0)


@pytest.mark.parametrize("name, value, words", [
    ("POPDIST_NUM_LOCAL_REPLICAS", "two", "POPDIST_NUM_LOCAL_REPLICAS is 'two', not a whole number"),
    ("POPDIST_NUM_LOCAL_REPLICAS", "3", "is not a multiple of POPDIST_NUM_LOCAL_REPLICAS 3"),
    ("POPDIST_REPLICA_INDEX_OFFSET", "3", "POPDIST_REPLICA_INDEX_OFFSET 3 with POPDIST_NUM_LOCAL_REPLICAS 2 is not"),
])
def test_malformed_variables_are_refused_naming_them(env, name, value, words):
    for key, v in LAUNCHED.items():
        env.setenv(key, v)
    env.setenv(name, value)
    with pytest.raises(ipu.InvalidArgument, match=words):
        ipu.getNumInstances() if "multiple" in words else ipu.getInstanceIndex()


def test_a_malformed_variable_is_refused_without_a_launcher_too(env):
    env.setenv("POPDIST_NUM_IPUS_PER_REPLICA", "0")
    with pytest.raises(ipu.InvalidArgument, match="POPDIST_NUM_IPUS_PER_REPLICA is 0; it must be at least 1"):
        ipu.getNumIpusPerReplica()


def test_attach_refuses_a_malformed_partition_size_naming_it(env):
    """Regression: VIPU_PARTITION_IPUS=four ended attach() in a bare ValueError (int()), naming nothing."""
    env.setenv("VIPU_PARTITION_IPUS", "four")
    with pytest.raises(ipu.InvalidArgument, match="VIPU_PARTITION_IPUS is 'four', not a whole number"):
        ipu.attach()
