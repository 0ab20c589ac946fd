"""`vipu plan` and the planner at submit, through the installed CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.cli_forks import run_script
from tests.cli.test_cli_e2e import run
from tests.conftest import console_script
from vipu.jobs.suggest import ORDER

ROOT = Path(__file__).resolve().parents[2]


def plan(*args: str) -> subprocess.CompletedProcess:
    return run_script(console_script("vipu"), ["plan", *args], env=None)


def test_plan_reports_memory_fit_and_step_time():
    out = plan(str(ROOT / "examples/tiny_pp.yaml"))
    assert out.returncode == 0, out.stderr
    assert "fits SRAM: yes" in out.stdout and "bubble: p-1 = 3 of the pipeline's m+p-1 = 11 ticks (27.3%)" in out.stdout
    data = json.loads(plan(str(ROOT / "examples/gpt3_pod256.yaml"), "--json").stdout)
    assert data["ipus"] == 256 and data["fits"] is True
    assert [data["layout"][axis] for axis in ("t", "t2", "p", "r", "io_tiles")] == [8, 8, 1, 4, 128]


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
    assert "cannot run here: the workload is too big to execute in the emulator (302," in out.stderr
    assert json.loads(run(server, "vipu", "queue", "--json").stdout)["jobs"] == []


def big_dp(tmp_path) -> Path:
    """tiny_dp.yaml with `hidden: 8000`: 128M fp32 params on each of the 4 replicas, 1.6 GiB (1.68 GB) per IPU."""
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
    assert lines[verdict + 1].startswith("  needs 1.6 GiB per IPU")
    assert lines[verdict + 2] == ORDER
    assert lines[verdict + 3].startswith("  t=") and verdict + 3 < lines.index("assumptions")
    # one line on stderr: the refusal `vipu submit` gives for the same spec on the same Pod
    submitted = run(server, "vipu", "submit", str(spec))
    assert submitted.returncode == 2 and submitted.stderr.startswith(out.stderr.rstrip("\n") + "; ")
    # and, since no layout of it would run in the emulator either, why: so the suggestion is not tried in vain
    assert "; and whatever the layout, it cannot run here: the workload is too big to execute" in submitted.stderr
    assert out.stderr.startswith("vipu: error: workload.layout does not fit bow-pod64: needs 1.6 GiB per IPU")
    assert f"a layout that fits: {lines[verdict + 3].strip()}" in out.stderr
    as_json = plan(str(spec), "--pod", "bow-pod64", "--json")
    assert as_json.returncode == 2 and as_json.stderr == out.stderr
    data = json.loads(as_json.stdout)
    assert data["fits"] is False and data["problems"][0].startswith("needs 1.6 GiB per IPU")
    assert data["suggestions"] and all(s["memory_per_ipu_bytes"] < 0.94e9 for s in data["suggestions"])
    for k, suggestion in enumerate(data["suggestions"]):  # the layouts the text lists, in its order
        assert lines[verdict + 3 + k].startswith(f"  {suggestion['description']} (")


def test_a_spec_that_plans_is_one_that_submits(server, tmp_path):
    """Regression: `vipu plan` read only ipus, pod and the workload, so a misspelt key or a negative time limit
    planned fine and was refused at submit."""
    text = (ROOT / "examples/tiny_dp.yaml").read_text()
    for name, spec, want in [("typo", text + "time_limt: 5m\n", "time_limt: unknown field"),
                             ("negative", text.replace("time_limit: 5m", "time_limit: -5"), "time_limit: -5s is negative"),
                             ("ipu", text.replace("ipus:", "ipu:"), "ipus: required; add it; ipu: unknown field")]:
        path = tmp_path / f"{name}.yaml"
        path.write_text(spec)
        planned, submitted = plan(str(path)), run(server, "vipu", "submit", str(path))
        assert planned.returncode == submitted.returncode == 2, (planned.stderr, submitted.stderr)
        assert want in planned.stderr and want in submitted.stderr, (planned.stderr, submitted.stderr)


def test_json_is_one_line_when_piped_and_a_reader_that_leaves_early_ends_it_quietly():
    out = plan(str(ROOT / "examples/tiny_dp.yaml"), "--json")
    assert out.returncode == 0 and out.stdout.count("\n") == 1 and json.loads(out.stdout)["fits"] is True
    # `vipu plan ... | head -1`: exit 1 (an internal error, by the README's table) with nothing said, at random;
    # now SIGPIPE, as squeue's, or 0 when the output was written before the reader left
    for _ in range(5):
        proc = subprocess.Popen([console_script("vipu"), "plan", str(ROOT / "examples/gpt3_pod256.yaml")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=60) in (0, -signal.SIGPIPE) and proc.stderr.read() == b""


def test_logs_help_keeps_its_sentences_whole():
    """Regression: typer's rich help kept the docstring's line breaks, so it printed "by / its names"."""
    out = subprocess.run([console_script("vipu"), "logs", "--help"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "COLUMNS": "400"})
    assert out.returncode == 0, out.stderr
    assert ("Each step line splits the emulated step into the parts `vipu plan` predicts, in its order and by its"
            " names (compute,") in out.stdout
    assert "batch-norm statistics, syncs" in out.stdout
