"""PopDist's functions read a launcher's POPDIST_* variables as PopDist does (instances and the instance index
derived from the replicas); without a launcher the program is one instance running every replica; a malformed or
missing variable is refused naming it."""

from __future__ import annotations

import pytest

import vipu.sdk as ipu

LAUNCHED = {"POPDIST_NUM_TOTAL_REPLICAS": "8", "POPDIST_NUM_IPUS_PER_REPLICA": "2", "POPDIST_NUM_LOCAL_REPLICAS": "2",
            "POPDIST_REPLICA_INDEX_OFFSET": "4"}


@pytest.fixture
def env(monkeypatch):
    for name in [*LAUNCHED, "VIPU_PARTITION_IPUS"]:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def view() -> tuple:
    return (ipu.isPopdistEnvSet(), ipu.getNumInstances(), ipu.getInstanceIndex(), ipu.getNumTotalReplicas(),
            ipu.getReplicaIndexOffset(), ipu.getNumLocalReplicas(), ipu.getNumIpusPerReplica())


def test_a_launchers_variables_give_this_instances_replicas(env):
    for name, value in LAUNCHED.items():
        env.setenv(name, value)
    assert view() == (True, 4, 2, 8, 4, 2, 2)


def test_without_a_launcher_one_instance_runs_every_replica(env):
    env.setenv("VIPU_PARTITION_IPUS", "16")
    assert view() == (False, 1, 0, 16, 0, 16, 1)
    env.setenv("POPDIST_NUM_IPUS_PER_REPLICA", "4")
    assert view() == (False, 1, 0, 4, 0, 4, 4)


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


def test_outside_a_job_the_missing_variable_is_named(env):
    with pytest.raises(ipu.InvalidArgument, match="VIPU_PARTITION_IPUS is not set: this program is not running as"):
        ipu.getNumTotalReplicas()
