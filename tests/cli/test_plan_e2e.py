"""`vipu plan` and the planner at submit, through the installed CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.conftest import console_script

ROOT = Path(__file__).resolve().parents[2]


def plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([console_script("vipu"), "plan", *args], capture_output=True, text=True, timeout=60)


def test_plan_reports_memory_fit_and_step_time():
    out = plan(str(ROOT / "examples/tiny_pp.yaml"))
    assert out.returncode == 0, out.stderr
    assert "fits SRAM: yes" in out.stdout and "bubble fraction (p-1)/(m+p-1) = 3/11" in out.stdout
    data = json.loads(plan(str(ROOT / "examples/gpt3_pod256.yaml"), "--json").stdout)
    assert data["ipus"] == 256 and data["layout"]["t"] == 8 and data["layout"]["p"] == 8 and data["layout"]["r"] == 4


def test_submit_refuses_a_model_that_cannot_fit_and_suggests_one(server, tmp_path):
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "name: too-big\nipus: 16\ntime_limit: 10m\nworkload:\n  kind: train\n"
        "  model: {kind: transformer, layers: 24, hidden: 1024, heads: 16, seq_len: 128, dtype: fp16}\n"
        "  layout: {t: 1, p: 1, r: 16, micro_batch: 64, micro_batches: 4}\n"
        "  optimizer: adam\n  steps: 10\n"
    )
    out = run(server, "vipu", "submit", str(spec))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "does not fit" in out.stderr and "a layout that fits" in out.stderr
    assert json.loads(run(server, "vipu", "queue", "--json").stdout) == []
