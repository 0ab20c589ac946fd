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


def big_dp(tmp_path) -> Path:
    """tiny_dp.yaml with `hidden: 8000`: 128M fp32 params on each of the 4 replicas, 1.68 GB per IPU."""
    spec = tmp_path / "big.yaml"
    spec.write_text((ROOT / "examples/tiny_dp.yaml").read_text().replace("hidden: 64", "hidden: 8000"))
    return spec


def test_plan_of_a_layout_that_does_not_fit_exits_2_with_the_layouts_that_do(server, tmp_path):
    """Regression: it exited 0, printed the layouts that fit after the assumptions, and --json had none."""
    spec = big_dp(tmp_path)
    out = plan(str(spec), "--pod", "bow-pod64")
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    verdict = lines.index("DOES NOT FIT:")
    assert lines[verdict + 1].startswith("  needs 1.68 GB per IPU")
    assert lines[verdict + 2] == "layouts of the same partition that fit, best first:"
    assert lines[verdict + 3].startswith("  t=") and verdict + 3 < lines.index("assumptions")
    # one line on stderr: the refusal `vipu submit` gives for the same spec on the same Pod
    submitted = run(server, "vipu", "submit", str(spec))
    assert submitted.returncode == 2 and out.stderr == submitted.stderr
    assert out.stderr.startswith("vipu: error: workload.layout does not fit bow-pod64: needs 1.68 GB per IPU")
    assert f"a layout that fits: {lines[verdict + 3].strip()}" in out.stderr
    as_json = plan(str(spec), "--pod", "bow-pod64", "--json")
    assert as_json.returncode == 2 and as_json.stderr == out.stderr
    data = json.loads(as_json.stdout)
    assert data["fits"] is False and data["problems"][0].startswith("needs 1.68 GB per IPU")
    assert data["suggestions"] and all(s["memory_per_ipu_bytes"] < 0.94e9 for s in data["suggestions"])
    for k, suggestion in enumerate(data["suggestions"]):  # the layouts the text lists, in its order
        assert lines[verdict + 3 + k].startswith(f"  {suggestion['description']} (")
