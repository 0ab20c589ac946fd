"""A real multi-node Ray cluster (ray.cluster_utils.Cluster: several Ray nodes on this machine): the controller
attaches with --ray-address ADDRESS (the same flag as --ray ADDRESS), machine actors spread over the nodes by a
custom resource, and removing a node ends its jobs NODE_FAIL and requeues them."""

from __future__ import annotations

import json
import signal

import pytest
from ray.cluster_utils import Cluster

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for


@pytest.fixture(scope="module")
def head():
    """The cluster's head node, started once for the module: it costs most of a cluster's start."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"ipu_host": 2}})
    yield cluster
    cluster.shutdown()


@pytest.fixture
def cluster(head):
    """The head and a second node of its own for each test (a test may remove it)."""
    worker = head.add_node(num_cpus=1, resources={"ipu_host": 2})
    head.wait_for_nodes()
    yield head, worker
    if worker in head.worker_nodes:
        head.remove_node(worker)


def test_machines_spread_over_nodes_and_a_lost_node_requeues_its_jobs(cluster, server_factory):
    ray_cluster, worker = cluster
    server = server_factory(extra=["--ray-address", ray_cluster.address, "--machine-bundle", "ipu_host=1"])
    [job] = submit(server, "--name", "spread", "--ipus", "16", "--time-limit", "10m")  # machines 0-3
    wait_for(lambda: show(server, job)["state"] == "RUNNING", timeout=30)
    # each node advertises ipu_host=2, so the four machine actors need both nodes; wait until all four answer
    wait_for(lambda: all(i["emulated"] for i in json.loads(
        run(server, "vipu", "list", "ipus", "--json").stdout)[:16]), timeout=120)
    assert show(server, job)["requeue_count"] == 0

    ray_cluster.remove_node(worker)

    def requeued():
        detail = show(server, job)
        return detail["requeue_count"] >= 1 and detail

    detail = wait_for(requeued, timeout=120)
    assert "NODE_FAIL" in [h["state"] for h in detail["detail"]["history"]]
    states = [i["state"] for i in json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)[:16]]
    failed_machines = sorted({n // 4 for n, s in enumerate(states) if s == "failed"})
    assert failed_machines and len(failed_machines) < 4, states  # the lost node's machines, not the head's

    # the requeued job's machines cannot be placed (the head's ipu_host is taken): their bring-up waits, and a stop
    # must not wait for it (it waited out the whole five-minute start timeout)
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=20) == 0


def test_a_program_runs_on_the_node_that_holds_its_machines(cluster, server_factory, tmp_path):
    """Each machine takes a whole node here (ipu_host=2), so two one-machine jobs hold machines on two nodes, and
    their programs run on those two nodes, as Slurm runs a batch script on the job's first node."""
    from tests.jobs.programs.test_programs_e2e import ended, spec_file

    ray_cluster, _ = cluster
    server = server_factory(extra=["--ray-address", ray_cluster.address, "--machine-bundle", "ipu_host=2"])
    script = "#!/bin/sh\necho $VIPU_RAY_NODE\n"
    jobs = [submit(server, spec_file(tmp_path, script, f"where{k}"))[0] for k in range(2)]
    assert [ended(server, job, timeout=180)["state"] for job in jobs] == ["COMPLETED", "COMPLETED"]
    nodes = [(tmp_path / f"slurm-{job}.out").read_text().strip() for job in jobs]
    assert all(nodes) and nodes[0] != nodes[1]
    assert {n.node_id for n in ray_cluster.list_all_nodes()} >= set(nodes)
