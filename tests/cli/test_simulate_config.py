"""`vipu simulate --scheduler-config FILE`: a site's QOS, weights and policy, read and refused as vipu-server does."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.cli_forks import run_script
from tests.conftest import console_script

SITE = """policy: sjf
qos:
  normal: {priority: 50}
  urgent: {priority: 100}
"""
TRACE = "submit_time,ipus,duration,qos\n0,16,100,urgent\n10,16,50,\n"  # the second row takes default_qos, normal


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    return run_script(console_script(args[0]), list(args[1:]), env=dict(os.environ), cwd=cwd)


def simulate_json(tmp_path, *args: str) -> list[dict]:
    out = run("vipu", "--json", "simulate", "--trace", "t.csv", "--pod", "bow-pod16", *args, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_sites_qos_replays_with_its_scheduler_config(tmp_path):
    (tmp_path / "t.csv").write_text(TRACE)
    (tmp_path / "site.yaml").write_text(SITE)
    out = run("vipu", "simulate", "--trace", "t.csv", "--pod", "bow-pod16", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr == (
        "vipu: error: t.csv:2: qos 'urgent' is unknown; use one of high, low, normal (the default scheduler"
        " config's); replay a site's QOS with its --scheduler-config FILE\n")
    [r] = simulate_json(tmp_path, "--scheduler-config", "site.yaml")  # no --policy: the file's, sjf
    assert (r["policy"], r["done"], r["avg_jct_s"], r["max_wait_s"]) == ("sjf", 2, 120.0, 90.0)
    assert [r["policy"] for r in simulate_json(tmp_path, "--scheduler-config", "site.yaml", "--policy", "fifo")] \
        == ["fifo"]  # --policy overrides the file's, as vipu-server --policy does
    (tmp_path / "site.yaml").write_text(SITE.replace("policy: sjf\n", ""))
    assert [r["policy"] for r in simulate_json(tmp_path, "--scheduler-config", "site.yaml")] == ["fifo", "backfill"]


@pytest.mark.parametrize("text, message", [
    (None, "--scheduler-config bad.yaml: cannot read it ([Errno 2] No such file or directory: 'bad.yaml'); give a"
           " readable YAML file"),
    ("- 1\n", "invalid scheduler config bad.yaml: expected a mapping of fields, got list"),
    ("qos: {urgent: {priority: -1}}\n", "qos.urgent.priority"),
    ("default_qos: gold\n", "default_qos 'gold' is not in qos (high, low, normal); add it"),
    ("policy: lifo\n", "policy 'lifo' is unknown; use one of backfill, fifo, priority, sjf"),
    ("policy: fifo\npolicy: sjf\n", "field 'policy' is given twice (line 2); keep one"),
])
def test_a_bad_scheduler_config_is_refused_as_vipu_server_refuses_it(tmp_path, text, message):
    (tmp_path / "t.csv").write_text(TRACE)
    if text is not None:
        (tmp_path / "bad.yaml").write_text(text)
    simulate = run("vipu", "simulate", "--trace", "t.csv", "--scheduler-config", "bad.yaml", cwd=tmp_path)
    server = run("vipu-server", "--scheduler-config", "bad.yaml", "--state-dir", str(tmp_path / "state"),
                 "--ray", "off", "--metrics-port", "-1", cwd=tmp_path)
    assert (simulate.returncode, server.returncode) == (2, 2)
    assert simulate.stderr.startswith("vipu: error: ") and server.stderr.startswith("vipu-server: error: ")
    said = simulate.stderr.removeprefix("vipu: error: ")
    assert said == server.stderr.removeprefix("vipu-server: error: ") and message in said
