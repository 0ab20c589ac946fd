"""`vipu-server --ray off` (the test server's default): the per-IPU and link series move while a training job runs,
from the training's step reports, as they do from machine actors with Ray; `vipu top` shows the job's machine
busy; link errors count `vipu-admin fail link` with or without actors, and keep counting through a repair."""

from __future__ import annotations

import json
import re

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.metrics.test_metrics import LONG_TRAINING, scrape
from vipu.hardware.power import IDLE_W


def samples(text: str, name: str) -> dict[tuple, float]:
    """{sorted label items: value} of one metric in an exposition."""
    out = {}
    for labels, value in re.findall(rf"^{name}{{(.*?)}} (\S+)$", text, re.MULTILINE):
        out[tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels)))] = float(value)
    return out


def ipu_series(text: str, name: str) -> dict[int, float]:
    return {int(dict(k)["ipu"]): v for k, v in samples(text, name).items()}


def test_a_training_job_moves_the_per_ipu_and_link_series(server, tmp_path):
    spec = tmp_path / "long.yaml"
    spec.write_text(LONG_TRAINING)  # 4 IPUs of machine 0, data-parallel: its allreduce crosses IPU-Links
    [job] = submit(server, str(spec))
    wait_for(lambda: show(server, job)["state"] == "RUNNING")
    series = f'vipu_job_step_seconds{{job_id="{job}",modelled="false"}}'
    wait_for(lambda: series in scrape(server.metrics_url), timeout=60)
    text = scrape(server.metrics_url)
    util, sram = ipu_series(text, "vipu_ipu_utilization_ratio"), ipu_series(text, "vipu_ipu_memory_used_bytes")
    power = ipu_series(text, "vipu_ipu_power_watts")
    for ipu in range(4):
        assert util[ipu] > 0 and sram[ipu] > 0 and power[ipu] > IDLE_W, (ipu, util[ipu], sram[ipu], power[ipu])
    for ipu in range(4, 8):
        assert util[ipu] == 0 and sram[ipu] == 0 and power[ipu] == IDLE_W
    sent = {dict(k)["machine"]: v for k, v in samples(text, "vipu_link_transmit_bytes_total").items()
            if dict(k)["link_type"] == "ipu_link"}
    assert sent["0"] > 0 and sent["1"] == 0
    wait_for(lambda: samples(scrape(server.metrics_url), "vipu_link_transmit_bytes_total")[
        (("link_type", "ipu_link"), ("machine", "0"))] > sent["0"])  # a counter: more steps, more bytes

    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert all(i.get("utilization", 0) > 0 for i in ipus[:4])  # what `vipu top` averages per machine
    top = run(server, "vipu", "top", "--once")
    assert top.returncode == 0, top.stderr
    [machine0] = [line for line in top.stdout.splitlines() if line.split()[:1] == ["0"]]
    assert not re.search(r"\s0\.0%", machine0) and "%" in machine0, machine0

    run(server, "vipu", "cancel", str(job))
    wait_for(lambda: show(server, job)["state"] == "CANCELLED")
    total = samples(scrape(server.metrics_url), "vipu_link_transmit_bytes_total")
    wait_for(lambda: ipu_series(scrape(server.metrics_url), "vipu_ipu_utilization_ratio")[0] == 0)
    after = samples(scrape(server.metrics_url), "vipu_link_transmit_bytes_total")
    assert after == total  # the job has ended; its bytes stay counted


def errors(server) -> dict[str, float]:
    return {dict(k)["machine"]: v for k, v in samples(scrape(server.metrics_url), "vipu_link_errors_total").items()
            if dict(k)["link_type"] == "ipu_link"}


def test_link_errors_count_failed_links_without_machine_actors(server):
    assert set(errors(server).values()) == {0.0} and len(errors(server)) == 16  # every machine of the Pod64
    out = run(server, "vipu-admin", "fail", "link", "3", "7")  # IPU 3 (machine 0) to IPU 7 (machine 1)
    assert out.returncode == 0, out.stderr
    assert errors(server)["0"] == 1 and errors(server)["1"] == 1 and errors(server)["2"] == 0
    assert run(server, "vipu-admin", "repair", "ipus", "3", "7").returncode == 0
    assert errors(server)["0"] == 1  # a counter: a repair does not take the failure back
