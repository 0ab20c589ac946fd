"""deploy/grafana: what the dashboards' template variables offer, checked against series evaluated by promtool (the
panels' own queries are run against a live controller in tests/metrics)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LABEL_VALUES = re.compile(r"label_values\((.+), (\w+)\)")  # Grafana's label_values(SELECTOR, LABEL)


@pytest.fixture(scope="session")
def promtool() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts/install_prometheus.sh")], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, check=True)
    return ROOT / out.stdout.strip().splitlines()[-1] / "promtool"


def variable(dashboard: str, name: str) -> dict:
    spec = json.loads((ROOT / "deploy/grafana/dashboards" / dashboard).read_text())
    [found] = [v for v in spec["templating"]["list"] if v["name"] == name]
    return found


def test_the_job_variable_offers_jobs_only_not_the_empty_id_of_hand_made_partitions(promtool, tmp_path):
    """Regression: `label_values(vipu_ipu_allocation_info, job_id)` also matched the IPUs of partitions made with
    `vipu create partition`, whose job_id is empty, so the job picker offered an empty choice."""
    selector, label = LABEL_VALUES.fullmatch(variable("job.json", "job")["query"]).groups()
    assert label == "job_id"
    series = [
        ('vipu_ipu_allocation_info{machine="0",ipu="0",partition="slurm_3",job_id="3"}', "1x5"),
        ('vipu_ipu_allocation_info{machine="0",ipu="1",partition="slurm_3",job_id="3"}', "1x5"),
        ('vipu_ipu_allocation_info{machine="1",ipu="4",partition="mine",job_id=""}', "1x5"),
        # above 4,096 IPUs the join is per partition
        ('vipu_partition_allocation_info{partition="slurm_5",job_id="5",first_ipu="0",ipus="128"}', "1x5"),
        ('vipu_partition_allocation_info{partition="theirs",job_id="",first_ipu="128",ipus="64"}', "1x5"),
    ]
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in series],
            # the values the variable offers are those of `label` on the series its selector matches
            "promql_expr_test": [{"expr": f"count by ({label}) ({selector})", "eval_time": "2m",
                                  "exp_samples": [{"labels": '{job_id="3"}', "value": 2},
                                                  {"labels": '{job_id="5"}', "value": 1}]}],
        }],
    }
    path = tmp_path / "job_variable.test.yml"
    path.write_text(yaml.safe_dump(test))
    out = subprocess.run([str(promtool), "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_build_dashboards_help_prints_usage_and_writes_nothing(tmp_path):
    """Regression: `build_dashboards.py --help` rewrote the dashboards instead of printing help. Run on a copy, so
    a regression writes beside the copy and not over the committed files."""
    import shutil
    import sys

    script = tmp_path / "build_dashboards.py"
    shutil.copy(ROOT / "deploy/grafana/build_dashboards.py", script)
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("usage:") and "--out" in out.stdout, out.stdout + out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build_dashboards.py"]  # nothing written

    written = tmp_path / "elsewhere"
    out = subprocess.run([sys.executable, str(script), "--out", str(written)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in written.iterdir()) == ["cluster.json", "job.json", "scheduler.json"]
