"""The docs stay true: generated references are current, and the getting-started and trace-format commands run as
written."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from tests.cli_forks import run_command_line

ROOT = Path(__file__).resolve().parents[2]


def test_generated_references_are_current():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "docs/generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, make in module.PAGES.items():
        assert (ROOT / "docs" / name).read_text() == make() + "\n", f"docs/{name} is stale: run docs/generate.py"


def test_the_scheduler_config_example_is_valid(tmp_path):
    from vipu.scheduler.config import load_scheduler_config

    spec = importlib.util.spec_from_file_location("generate", ROOT / "docs/generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "scheduler.yaml").write_text(module.SCHEDULER_EXAMPLE)
    config = load_scheduler_config(str(tmp_path / "scheduler.yaml"), None)  # as vipu-server --scheduler-config
    assert config.qos["scavenger"].preempt_mode == "cancel" and config.qos["urgent"].preempt == ("scavenger",)


def test_getting_started_commands_run_as_written(server):
    lines = (ROOT / "docs/getting-started.md").read_text().splitlines()
    commands = [line[2:] for line in lines if line.startswith("$ ")]
    assert len(commands) > 10
    env = {**server.env(), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    said = {}
    for command in commands:
        out = run_command_line(command, env, ROOT)
        assert out.returncode == 0, (command, out.stdout, out.stderr)
        said[command] = out.stdout
    # and what the page says to look for is there (with job 1 at 1 s, job 2 had started before a reader could look)
    queue = {row[0]: row for row in ([cell.strip() for cell in line.split("|")] for line in said["vipu queue"].splitlines())}
    assert queue["2"][1] == "big" and queue["2"][3] == "PD" and queue["2"][-1] == "(Resources)", said["vipu queue"]
    show = dict(line.split("=", 1) for line in said["vipu show job 2"].splitlines() if "=" in line)
    assert show["JobState"] == "PENDING" and show["Reason"] == "Resources" and show["EstimatedStart"] != "Unknown"
    assert "memory per IPU" in said["vipu plan examples/tiny_dp.yaml"]
    assert said["vipu submit examples/tiny_pp.yaml examples/tiny_tp.yaml --hold"] == "Submitted batch job 4\nSubmitted batch job 5\n"
    assert said["vipu show job 6 --script"] == (ROOT / "examples/hello.sh").read_text()  # the script, as it was
    shown = dict(line.split("=", 1) for line in said["vipu show job 7"].splitlines() if "=" in line)
    assert (shown["JobName"], shown["Command"], shown["StdOut"]) == ("wrap", "(batch script)", f"{ROOT}/slurm-7.out")


def comparable(lines: list[str]) -> list[list[str]]:
    """A command's output lines as the page shows them, field by field; in `vipu simulate`'s first table (from its
    heading, which ends with jobs/s, to the blank line) without the last field, the replay's wall-clock speed."""
    out, speed = [], False
    for line in lines:
        speed = line.endswith("jobs/s") or (speed and line != "")
        out.append(line.split()[:-1] if speed else line.split())
    return out


def test_the_trace_page_commands_run_as_written(tmp_path):
    """Each `$ ...` line of docs/traces.md, run beside the page's example files (named on their opening fences),
    prints what the page shows after it, but for jobs/s (wall-clock speed), and exits 2 for an error."""
    page = (ROOT / "docs/traces.md").read_text()
    for name, text in re.findall(r"```\w+ (\S+)\n(.*?)```", page, re.S):
        (tmp_path / name).write_text(text)
    assert (tmp_path / "smallest_first.py").read_text() == (ROOT / "examples/policies/smallest_first.py").read_text()
    runs = []  # (command, the lines the page shows after it)
    for block in re.findall(r"```console\n(.*?)```", page, re.S):
        for part in block.split("$ ")[1:]:
            command, *shown = part.splitlines()
            runs.append((command, shown))
    flags = " ".join(command for command, _ in runs)
    assert len(runs) == 12 and all(flag in flags for flag in (
        "--scheduler-config site.yaml", "--policy-file", "--seeds", "--arrivals", "--runtimes", "--synthetic",
        "--jobs-out", "--plot", ".swf", "cluster_log.csv"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command, shown in runs:
        out = run_command_line(command, env, tmp_path, timeout=120)
        error = bool(shown) and shown[0].startswith("vipu: error: ")
        assert out.returncode == (2 if error else 0), (command, out.stderr)
        said = (out.stderr if error else out.stdout).splitlines()
        said = said[len(said) - len(shown):]
        assert comparable(said) == comparable(shown), (command, out.stdout)
    assert (tmp_path / "replay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the page's --plot drew it


def test_the_readmes_count_the_planner_bench_s_held_out_points():
    """Regression (walk33): examples/README.md said thirteen held-out results where the bench has sixteen."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_planner", ROOT / "bench/bench_planner.py")
        bench = sys.modules["bench_planner"] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(ROOT / "bench"))
        sys.modules.pop("bench_planner", None)
    held = sum(not point.fitted for point in bench.POINTS)
    words = {13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen", 17: "seventeen", 18: "eighteen"}
    readme, examples = (ROOT / "README.md").read_text(), (ROOT / "examples/README.md").read_text()
    assert f"the {words[held]} others are held out" in readme and readme.count("| held out |") == held
    assert f"predicts {words[held]} other published results" in " ".join(examples.split())


def test_the_spec_reference_says_which_specs_are_executed():
    """Regression (walk40): which specs run, and not only plan, was said nowhere a user reads."""
    from vipu.jobs.train.problem import MAX_PARAMS, MAX_STEP_FLOPS

    page = (ROOT / "docs" / "job-spec.md").read_text()
    section = page.split("### Executed or planned only", 1)[1].split("\n## ", 1)[0]
    for needed in ("`vocab`", "`layers_per_stage`", "even split", "per_tensor", f"{MAX_PARAMS:,} parameters",
                   f"{MAX_STEP_FLOPS:,.0f} FLOPs", "execute: false"):
        assert needed in section, needed


def test_the_spec_reference_lists_the_plan_only_pod_key():
    """Regression (walk40): examples/README said "`pod` is for planning only" but the reference did not list it."""
    page = (ROOT / "docs" / "job-spec.md").read_text()
    section = page.split("### plan file (`vipu plan SPEC`)", 1)[1].split("\n## ", 1)[0]
    assert "| `pod` | `str | None` | `None` |" in section and "`vipu submit` refuses" in section
