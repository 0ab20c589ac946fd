"""The poprun environment a train job's instances see: computed by the live controller for the job's partition
slurm_<id>, hand-checked here for a data-, a pipeline- and a tensor-parallel job; read back by the training, whose
instances run exactly the replicas their POPDIST_* variables give them; stored with the result and shown by
`vipu logs`."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tests.jobs.train.builders import ATOL, RTOL, mlp, pod, reference, run, transformer, workload
from vipu.errors import InvalidArgument
from vipu.jobs.layout import Layout
from vipu.jobs.train.poprun import local_environments, num_instances, read_instances
from vipu.jobs.train.results import InstanceRun
from vipu.partition.partition_record import PartitionRequest
from vipu.control.startup import open_plane
from vipu.jobs.train.runs import JobResult, _Run

HOST, PORT = "10.1.2.3", 8091


@pytest.fixture
def plane_on(tmp_path):
    opened = []

    def make(pod_name: str):
        rt = open_plane(pod_name, tmp_path / f"{pod_name}-{len(opened)}", HOST, PORT)
        opened.append(rt)
        return rt

    yield make
    for rt in opened:
        rt.store.close()


def job_environment(rt, job_id: int, first_ipu: int, size: int, layout: dict, num_gcds: int = 1, model=None):
    """The environment the live controller computes for job `job_id` once its partition slurm_<id> exists."""
    with rt.lock:
        rt.controller.partitions.create(PartitionRequest(
            name=f"slurm_{job_id}", size=size, num_gcds=num_gcds, first_ipu=first_ipu, reconfigurable=True,
            holder=f"job {job_id}"))
        return rt.runners["train"].environment(job_id, workload(model or mlp(layers=8), **layout))


def target(size: int, configuration: str, topology: str, gateway: str, instance: int) -> str:
    return json.dumps({"ipuLinkDomainSize": str(size), "ipuLinkConfiguration": configuration,
                       "ipuLinkTopology": topology, "gatewayMode": gateway, "instanceSize": str(instance)},
                      separators=(",", ":"))


def expected(partition: str, options: str, total: int, per_replica: int, local: int, instance: int,
             gcd: int = 0) -> dict[str, str]:
    return {
        "IPUOF_VIPU_API_HOST": HOST, "IPUOF_VIPU_API_PORT": str(PORT), "IPUOF_VIPU_API_PARTITION_ID": partition,
        "IPUOF_VIPU_API_GCD_ID": str(gcd), "IPUOF_VIPU_API_TIMEOUT": "120", "IPUOF_LOG_LEVEL": "WARN",
        "POPLAR_TARGET_OPTIONS": options,
        "POPDIST_NUM_TOTAL_REPLICAS": str(total), "POPDIST_NUM_IPUS_PER_REPLICA": str(per_replica),
        "POPDIST_NUM_LOCAL_REPLICAS": str(local), "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
        "POPDIST_REPLICA_INDEX_OFFSET": str(instance * local), "POPDIST_LOCAL_INSTANCE_INDEX": str(instance),
    }


# --- the environment, hand-checked ----------------------------------------------------------------------------
def test_data_parallel_job_one_instance_per_machine(plane_on):
    # 16 replicas of 1 IPU on IPUs 16-31 of a Pod64: 4 machines -> 4 instances of 4 replicas; a 16-IPU block of a
    # 64-IPU torus domain is a mesh without gateway mode
    envs = job_environment(plane_on("bow-pod64"), 7, 16, 16, dict(r=16))
    options = target(16, "default", "mesh", "false", 16)
    assert envs == [expected("slurm_7", options, total=16, per_replica=1, local=4, instance=i) for i in range(4)]


def test_pipeline_job_one_instance_per_replica(plane_on):
    # p=8, r=8 on a whole Pod64: a replica spans 2 machines, so one instance per replica; the whole torus domain
    # gets the target options a real 64-IPU partition gets (the same as poprun's log of a Pod64 BERT run)
    envs = job_environment(plane_on("bow-pod64"), 3, 0, 64, dict(p=8, r=8, micro_batches=8))
    options = target(64, "slidingWindow", "torus", "true", 64)
    assert options == ('{"ipuLinkDomainSize":"64","ipuLinkConfiguration":"slidingWindow","ipuLinkTopology":"torus",'
                       '"gatewayMode":"true","instanceSize":"64"}')
    assert envs == [expected("slurm_3", options, total=8, per_replica=8, local=1, instance=i) for i in range(8)]


def test_tensor_parallel_job(plane_on):
    # t=4 on one machine: one instance, one replica of 4 IPUs
    [env] = job_environment(plane_on("bow-pod16"), 11, 8, 4, dict(t=4))
    assert env == expected("slurm_11", target(4, "default", "mesh", "false", 4), total=1, per_replica=4, local=1,
                           instance=0)
    # t=2, r=8 on the whole Pod16 (a mesh domain of 16): 2 replicas of 2 IPUs per machine
    envs = job_environment(plane_on("bow-pod16"), 12, 0, 16, dict(t=2, r=8))
    options = target(16, "default", "mesh", "true", 16)
    assert envs == [expected("slurm_12", options, total=8, per_replica=2, local=2, instance=i) for i in range(4)]


def test_each_instance_gets_the_gcd_holding_its_ipus(plane_on):
    envs = job_environment(plane_on("bow-pod64"), 5, 32, 16, dict(r=16), num_gcds=2)
    assert [e["IPUOF_VIPU_API_GCD_ID"] for e in envs] == ["0", "0", "1", "1"]
    assert {json.loads(e["POPLAR_TARGET_OPTIONS"])["instanceSize"] for e in envs} == {"8"}


def test_a_job_across_pod64s_has_instances_in_every_ipu_link_domain():
    lay = Layout(r=128)
    envs = local_environments(lay, pod("bow-pod256"), 128)
    assert len(envs) == 32 == num_instances(lay, pod("bow-pod256"))
    per_replica = 1
    first_ipus = [128 + int(e["POPDIST_REPLICA_INDEX_OFFSET"]) * per_replica for e in envs]
    assert {ipu // 64 for ipu in first_ipus} == {2, 3}
    assert json.loads(envs[0]["POPLAR_TARGET_OPTIONS"])["gatewayMode"] == "true"


@pytest.mark.parametrize("layout,instances", [(dict(r=1), 1), (dict(r=2), 1), (dict(r=4), 1), (dict(r=8), 2),
                                              (dict(t=2, r=8), 4), (dict(p=8, r=2), 2), (dict(t=8, p=2), 1)])
def test_instance_counts(layout, instances):
    assert num_instances(Layout(**layout), pod("bow-pod16")) == instances


# --- the training reads it --------------------------------------------------------------------------------------
def test_training_runs_each_instance_s_replicas_and_matches_single_device(plane_on):
    rt = plane_on("bow-pod64")
    w = workload(mlp(), r=16, micro_batch=1, steps=3)
    envs = job_environment(rt, 9, 16, 16, dict(r=16, micro_batch=1))
    result = run(w, 16, "bow-pod64", environments=envs)
    want, _ = reference(w)
    np.testing.assert_allclose(result.losses, want, rtol=RTOL, atol=ATOL)
    assert result.instances == [
        InstanceRun(index=i, partition="slurm_9", gcd=0, replicas=list(range(4 * i, 4 * i + 4)),
                    ipus=list(range(16 + 4 * i, 20 + 4 * i))) for i in range(4)]


@pytest.mark.parametrize("model,layout", [
    (mlp(), dict(p=4, micro_batches=3)),
    (transformer(), dict(t=2, r=4, micro_batches=2)),
    (mlp(), dict(t=2, p=2, r=4, micro_batches=2)),
])
def test_the_result_is_the_same_as_before_and_equals_single_device(model, layout):
    w = workload(model, "adam", **layout)
    default = run(w)  # the stand-in partition's environments
    envs = local_environments(w.layout, pod(), 0)
    shuffled = random.Random(0).sample(envs, len(envs))
    given = run(w, environments=shuffled)  # instances may come in any order: each knows its replicas
    assert given.losses == default.losses and given.emulated_step_s == default.emulated_step_s
    want, _ = reference(w)
    np.testing.assert_allclose(given.losses, want, rtol=RTOL, atol=ATOL)
    assert [run_.replicas for run_ in given.instances] == [
        list(range(i * len(given.instances[0].replicas), (i + 1) * len(given.instances[0].replicas)))
        for i in range(len(given.instances))]


def test_instances_split_as_their_environments_say():
    """The same 4 replicas as one instance of 4 or two instances of 2 (POPDIST_REPLICA_INDEX_OFFSET 0 and 2):
    each instance runs its own replicas' samples, and together they train exactly as before."""
    w = workload(mlp(), r=4, micro_batches=2, steps=1)
    envs = local_environments(w.layout, pod(), 0)
    [only] = envs
    halves = [{**only, "POPDIST_NUM_LOCAL_REPLICAS": "2", "POPDIST_REPLICA_INDEX_OFFSET": str(o)} for o in (0, 2)]
    assert [list(i.replicas) for i in read_instances(halves, w.layout)] == [[0, 1], [2, 3]]
    assert run(w, environments=halves).losses == run(w).losses


@pytest.mark.parametrize("change,message", [
    (lambda e: e.pop("POPDIST_NUM_LOCAL_REPLICAS"), "lacks POPDIST_NUM_LOCAL_REPLICAS"),
    (lambda e: e.pop("IPUOF_VIPU_API_PARTITION_ID"), "lacks IPUOF_VIPU_API_PARTITION_ID"),
    (lambda e: e.update(POPDIST_NUM_IPUS_PER_REPLICA="2"), "POPDIST_NUM_IPUS_PER_REPLICA is 2"),
    (lambda e: e.update(POPDIST_NUM_TOTAL_REPLICAS="8"), "POPDIST_NUM_TOTAL_REPLICAS is 8"),
    (lambda e: e.update(POPDIST_REPLICA_INDEX_OFFSET="x"), "not a whole number"),
    (lambda e: e.update(POPLAR_TARGET_OPTIONS="{"), "not JSON"),
])
def test_a_broken_environment_fails_fast_naming_the_variable(change, message):
    w = workload(mlp(), r=4, steps=1)
    [env] = local_environments(w.layout, pod(), 0)
    change(env)
    with pytest.raises(InvalidArgument, match=message):
        run(w, environments=[env])


def test_instances_must_cover_every_replica_once():
    w = workload(mlp(), r=4, steps=1)
    [env] = local_environments(w.layout, pod(), 0)
    twice = [{**env, "POPDIST_NUM_LOCAL_REPLICAS": "2", "POPDIST_REPLICA_INDEX_OFFSET": "0"}] * 2
    with pytest.raises(InvalidArgument, match=r"replicas \(0-1, 0-1\) must cover replicas 0 to 3 once each"):
        run(w, environments=twice)
    other = [{**twice[0]}, {**twice[0], "POPDIST_REPLICA_INDEX_OFFSET": "2", "IPUOF_VIPU_API_PARTITION_ID": "p2"}]
    with pytest.raises(InvalidArgument, match="one job runs on one partition"):
        run(w, environments=other)


def test_popdist_derived_instance_index_and_count():
    lay = Layout(t=2, r=8)
    instances = read_instances(local_environments(lay, pod(), 0), lay)
    assert [(i.instance_index, i.num_instances, list(i.replicas)) for i in instances] == [
        (0, 4, [0, 1]), (1, 4, [2, 3]), (2, 4, [4, 5]), (3, 4, [6, 7])]
    assert instances[0].partition == "local" and instances[0].api_host == "localhost"
    assert instances[0].api_port == 8090 and instances[0].target_options["instanceSize"] == "16"


# --- stored with the result and shown by `vipu logs` -------------------------------------------------------------
def test_the_environment_is_stored_with_the_result_and_logged(plane_on):
    rt = plane_on("bow-pod16")
    w = workload(mlp(), t=2, r=8, steps=2)
    envs = job_environment(rt, 4, 0, 16, dict(t=2, r=8))
    result = run(w, environments=envs)
    record = JobResult(name="4", result=result, environment=envs)
    rt.store.commit([("job_result", "4", record)], [])
    rt.runners["train"].results.clear()
    assert rt.runners["train"].record(4).environment == envs  # read back from the store
    lines = rt.runners["train"].log_lines(4)
    head = lines[:5]
    assert head[0].startswith("poprun environment: 4 instances; every instance sees IPUOF_VIPU_API_HOST=10.1.2.3"
                              " IPUOF_VIPU_API_PORT=8091 IPUOF_VIPU_API_PARTITION_ID=slurm_4")
    assert "POPDIST_NUM_TOTAL_REPLICAS=8 POPDIST_NUM_IPUS_PER_REPLICA=2 POPDIST_NUM_LOCAL_REPLICAS=2" in head[0]
    assert head[1:] == [
        f"  instance {i}: POPDIST_REPLICA_INDEX_OFFSET={2 * i} POPDIST_LOCAL_INSTANCE_INDEX={i} -> ran replicas"
        f" {2 * i}-{2 * i + 1} on IPUs {4 * i}-{4 * i + 3}" for i in range(4)]
    assert sum("loss" in line for line in lines) == w.steps  # `vipu logs` callers count the step lines
    # while the job runs, the environment is known before any step
    rt.runners["train"].results.clear()
    rt.store.commit([], [("job_result", "4")])
    rt.runners["train"].runs[4] = _Run(4, 1, started=0.0, first_ipu=0, ipus=16, environment=envs, earlier=[])
    assert rt.runners["train"].log_lines(4)[0] == head[0]
