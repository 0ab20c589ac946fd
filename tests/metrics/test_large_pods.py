"""Metrics at scale: a Pod of up to 4,096 IPUs exports series per IPU and per machine; above it, series per IPU-Link
domain (vipu/metrics/ild_series.py says why): on 65,536 IPUs about 10 a Pod64 rack, not 540,000 in one scrape.
A controller on a Bow Pod1024 serves `vipu info`, `vipu top`, the queue and its 1,024 IPUs' series."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, submit, wait_for
from tests.metrics.test_metrics import (  # noqa: F401 (prometheus fixtures: they scrape this module's server)
    LONG_TRAINING, busy, dashboard_exprs, prometheus, prometheus_bin, query, scrape)
from vipu.hardware.pod_files import load_pod
from vipu.hardware.power import IDLE_W, power_watts, temperatures_celsius
from vipu.metrics.ild_series import PER_IPU_SERIES_MAX, ild_families
from vipu.partition.controller import Controller
from vipu.partition.ipu_status import ipu_statuses
from vipu.partition.partition_record import PartitionRequest
from vipu.partition.pod_state import NoJournal
from vipu.partition.rules import job_holder

ROOT = Path(__file__).resolve().parents[2]
POD65536 = str(ROOT / "examples/pods/pod65536.yaml")


@pytest.fixture
def server(server_factory):
    """The largest Pod, without Ray: the `prometheus` fixture scrapes this controller in this module."""
    return server_factory(POD65536)


@pytest.fixture
def scrape_interval() -> str:
    """Its scrape takes 0.3-0.5 s here, more under load, and a scrape's timeout is its interval: one that times out
    marks every series stale (at 3 s, under load average 9, ten panels stayed empty for a minute)."""
    return "5s"


def families(pod, stats, partitions=()):
    ctl = Controller(pod, NoJournal(), lambda: 0.0)
    for name, size in partitions:
        ctl.partitions.create(PartitionRequest(name=name, size=size, holder=job_holder(int(name.split("_")[1]))))
    return {f.name: f for f in ild_families(pod, ipu_statuses(ctl.state), ctl.state.partitions.values(), stats)}


def values(family) -> dict[tuple, float]:
    return {tuple(s.labels.values()): s.value for s in family.samples if not s.name.endswith("_created")}


def test_the_largest_pod_exports_series_per_ipu_link_domain():
    pod = load_pod(POD65536)
    assert pod.ipus > PER_IPU_SERIES_MAX == 4096
    stats = {16: {"per_ipu": {64: {"utilisation": 0.5, "sram_used_bytes": 1000}},  # machine 16: ILD 1's first
                  "streaming": {"used_bytes": 7}, "links": {"ipu_link": {"sent_bytes": 3, "received_bytes": 2}}}}
    got = families(pod, stats, [("slurm_9", 128)])
    assert sum(len(values(f)) for f in got.values()) == 1024 * 10 + 1 + 2  # 10 a rack, the join, 2 racks held
    util = values(got["vipu_ild_utilization_ratio"])
    # IPU 64 is in partition slurm_9 (IPUs 0-127), so it counts as working
    assert util[("1",)] == pytest.approx(0.5 / 64) and util[("0",)] == 0.0
    assert values(got["vipu_ild_memory_used_bytes"])[("1",)] == 1000
    assert values(got["vipu_ild_power_watts"])[("1",)] == pytest.approx(63 * IDLE_W + power_watts(0.5))
    assert values(got["vipu_ild_temperature_celsius"])[("1", "die")] == temperatures_celsius(0.5)["die"]
    assert values(got["vipu_ild_link_transmit_bytes"])[("1", "ipu_link")] == 3
    assert values(got["vipu_ild_streaming_memory_used_bytes"])[("1",)] == 7
    assert values(got["vipu_partition_allocation_info"]) == {("slurm_9", "9", "0", "128"): 1}
    assert values(got["vipu_partition_ipus"]) == {("slurm_9", "9", "0"): 64, ("slurm_9", "9", "1"): 64}


def test_a_controller_on_a_pod1024_serves_info_top_the_queue_and_per_ipu_series(server_factory):
    server = server_factory("bow-pod1024")
    [whole] = submit(server, "--name", "whole", "--ipus", "1024", "--time-limit", "10m")
    waiting = submit(server, "--name", "rack", "--ipus", "64", "--time-limit", "10m", "--array", "0-19")[0]
    wait_for(lambda: jobs(server)[whole]["job_state"] == ["RUNNING"])
    info = run(server, "vipu", "info")
    assert info.returncode == 0, info.stderr
    racks = [[c.strip() for c in line.split("|")] for line in info.stdout.splitlines() if "pod64-" in line]
    assert racks == [["pod64-[0-15]", "64", "0", "64", "0", "0", "0", "0"]], info.stdout  # same counts: one row

    top = run(server, "vipu", "top", "--once")
    assert top.returncode == 0, top.stderr
    assert "bow-pod1024: 1024 IPUs  1024 allocated  0 idle" in top.stdout and "1 running, 20" in top.stdout
    assert "IPU-Link domains (Pod64 racks)" in top.stdout
    [racks] = [line for line in top.stdout.splitlines() if line.startswith("0-15 ")]  # the same marks: one row
    assert "0-255" in racks and "#" * 16 in racks and f"slurm_{whole}" in racks
    assert sum(f"{waiting}_" in line for line in top.stdout.splitlines()) == 10  # the head of the queue only

    queue = run(server, "vipu", "queue")
    assert queue.returncode == 0 and f"{waiting}_[1-19]" in queue.stdout, queue.stdout  # squeue's one line

    text = scrape(server.metrics_url)
    assert len(re.findall(r"^vipu_ipu_utilization_ratio\{", text, re.MULTILINE)) == 1024
    assert len(re.findall(r"^vipu_ipu_allocation_info\{", text, re.MULTILINE)) == 1024
    assert len(re.findall(r'^vipu_ipus\{ild="15"', text, re.MULTILINE)) == 6


def test_every_dashboard_shows_data_on_the_largest_pod(server, prometheus, tmp_path):
    """Regression: past 4,096 IPUs the dashboards read only per-IPU series, which a large Pod does not export, so
    their panels went blank; each falls back to the per-rack series."""
    busy(server)
    spec = tmp_path / "long.yaml"
    spec.write_text(LONG_TRAINING)
    [training] = submit(server, str(spec))
    wait_for(lambda: query(prometheus, f'vipu_job_step_seconds{{job_id="{training}"}}'), timeout=60)
    exprs = [(title, e.replace("$__rate_interval", "30s").replace("$job", str(training)))
             for title, e in dashboard_exprs()]
    deadline = time.monotonic() + 90  # a few scrapes, so that rate() has two samples
    while (empty := [title for title, e in exprs if not query(prometheus, e)]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert empty == []
    assert not query(prometheus, "vipu_ipu_utilization_ratio")  # the fallbacks, not per-IPU series, gave the data
    ipus = query(prometheus, f'sum(vipu_partition_ipus{{job_id="{training}"}})')
    assert float(ipus[0]["value"][1]) == 4
