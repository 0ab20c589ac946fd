"""Modelled jobs end to end (`workload.execute: false`) against a real controller: BERT-Large as
examples/bert_large_pod16.yaml lays it out, too big for the emulator, is admitted only modelled; it holds its
partition for steps x the planner's predicted step time x the controller's --modelled-time-scale, ends COMPLETED
then (TIMEOUT under a shorter limit, CANCELLED by a cancel); its name is the same in every view, and `vipu top`,
`vipu show job` and --json say it is modelled."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for
from tests.metrics.test_metrics import scrape

ROOT = Path(__file__).resolve().parents[2]
SCALE = 0.0025  # BERT-Large's predicted 12.7 s step held for 32 ms
STEPS = 200  # ~6 s: time for the checks while it runs, on a busy machine


def spec_file(tmp_path, name: str, execute: bool = False, steps: int = STEPS, time_limit: str = "10m") -> Path:
    spec = yaml.safe_load((ROOT / "examples/bert_large_pod16.yaml").read_text())
    spec["workload"].update(steps=steps, execute=execute)
    spec.update(name=name, time_limit=time_limit)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def predicted_step_s(server, spec: Path) -> float:
    """What `vipu plan` predicts for the spec on the controller's Pod."""
    out = run(server, "vipu", "plan", str(spec), "--pod", server.pod, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["step_s"]


def ended(server, job: int, timeout: float = 60) -> dict:
    return wait_for(lambda: (d := show(server, job))["state"] not in ("PENDING", "RUNNING", "COMPLETING") and d,
                    timeout=timeout)


@pytest.fixture
def server(server_factory):
    return server_factory(extra=["--modelled-time-scale", str(SCALE)])


def test_only_a_modelled_job_is_admitted_and_it_completes_at_its_predicted_time(server, tmp_path):
    executed = run(server, "vipu", "submit", str(spec_file(tmp_path, "executed", execute=True)))
    assert executed.returncode == 2, executed.stdout
    assert "too big to execute in the emulator" in executed.stderr
    assert "submit it with workload.execute: false to model it" in executed.stderr

    spec = spec_file(tmp_path, "bert")
    step_s = predicted_step_s(server, spec)
    hold = STEPS * step_s * SCALE
    [job] = submit(server, str(spec))
    running = wait_for(lambda: (d := show(server, job))["state"] == "RUNNING" and d)
    seen_running = time.time()

    # while it runs: labelled, its steps so far reported as a real run's, its IPUs busy as predicted
    series = f'vipu_job_step_seconds{{job_id="{job}",modelled="true"}}'
    text = wait_for(lambda: (t := scrape(server.metrics_url)) and series in t and t, timeout=10)
    assert float(re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE).group(1)) == pytest.approx(step_s)
    assert f'vipu_job_loss{{job_id="{job}"}}' not in text  # it computes nothing: no loss
    util = re.search(r'^vipu_ipu_utilization_ratio\{ild="0",ipu="0",machine="0"\} (\S+)$', text, re.MULTILINE)
    assert 0.5 < float(util.group(1)) < 1  # BERT-Large's IPUs are busy most of its predicted step
    assert running["modelled"] and jobs(server)[job]["modelled"]
    assert "Modelled=yes" in run(server, "vipu", "show", "job", str(job)).stdout
    top = run(server, "vipu", "top", "--once").stdout
    [row] = [[c.strip() for c in line.split("│")] for line in top.splitlines() if "bert" in line]
    assert row[:2] == [str(job), "bert"] and row[-1] == "modelled", top  # the RUN column says it
    queued = run(server, "vipu", "queue").stdout.splitlines()  # one name in every view, as cancel -n matches it
    assert [c.strip() for c in queued[-1].split("|")][:2] == [str(job), "bert"] and "modelled" not in queued[-1]
    live = run(server, "vipu", "logs", str(job)).stdout.splitlines()
    assert live[0].startswith("modelled run (execute: false): computes nothing;")
    assert f"x time scale {SCALE:g} = {hold:,.3f} s of wall-clock" in live[0]

    done = ended(server, job)
    seen_done = time.time()
    assert done["state"] == "COMPLETED" and done["exit_code"] == 0
    assert done["end_time"] - done["start_time"] == pytest.approx(hold, abs=0.01)  # steps x predicted x scale
    assert done["end_time"] >= seen_running and done["end_time"] <= seen_done  # it held its partition until then
    record = done["training"]
    assert record["modelled"] == {"time_scale": SCALE, "step_wall_s": pytest.approx(step_s * SCALE),
                                  "steps_run": STEPS}
    result = record["result"]
    assert result["modelled"] == record["modelled"] and result["losses"] == [] and not result["stopped"]
    assert result["predicted_step_s"] == result["emulated_step_s"] == pytest.approx(step_s, abs=1e-9)
    assert [u["ipu"] for u in done["ipu_usage"]] == list(range(16))
    assert all(0.5 < u["utilisation"] < 1 and u["sram_peak_bytes"] > 0 for u in done["ipu_usage"])

    ended_row = [c.strip() for c in run(server, "vipu", "history").stdout.splitlines()[-1].split("|")]
    assert ended_row[:2] == [str(job), "bert"] and ended_row[3] == "COMPLETED" and "modelled" not in ended_row
    logs = run(server, "vipu", "logs", str(job)).stdout.splitlines()
    assert logs[0] == live[0]
    steps = [line for line in logs if line.startswith("step ")]
    assert len(steps) == STEPS and all("loss none (modelled)" in line for line in steps)
    assert "link traffic: not counted (modelled: no bytes moved)" in logs
    as_data = json.loads(run(server, "vipu", "logs", str(job), "--json").stdout)
    assert len(as_data["steps"]) == STEPS and [s["step"] for s in as_data["steps"]] == list(range(STEPS))
    assert all(s["modelled"] and s["loss"] is None  # the run's times read from Durations: to the nanosecond
               and s["emulated_step_s"] == pytest.approx(result["predicted_step_s"], abs=1e-9) for s in as_data["steps"])
    text = run(server, "vipu", "show", "job", str(job)).stdout
    assert "Modelled=yes" in text and f"ModelledTimeScale={SCALE:g}" in text
    assert f"ModelledSteps={STEPS}/{STEPS}" in text
    assert "Losses=none (modelled: computed nothing)" in text
    assert json.loads(run(server, "vipu", "list", "partitions", "--json").stdout) == []


def test_a_modelled_job_times_out_under_a_shorter_limit_and_cancels(server, tmp_path):
    short = spec_file(tmp_path, "short", time_limit="1s")  # 1 s of its ~6 s
    step_wall = predicted_step_s(server, short) * SCALE
    [timed, cancelled] = [submit(server, str(short))[0], submit(server, str(spec_file(tmp_path, "long")))[0]]
    wait_for(lambda: show(server, cancelled)["state"] == "RUNNING")
    assert run(server, "vipu", "cancel", str(cancelled)).returncode == 0

    done = ended(server, timed)
    assert done["state"] == "TIMEOUT"
    assert done["end_time"] - done["start_time"] == pytest.approx(1.0, abs=0.01)
    result = done["training"]["result"]
    assert result["stopped"] and result["modelled"]["steps_run"] == int(1.0 / step_wall)  # the steps that had passed
    logs = run(server, "vipu", "logs", str(timed)).stdout
    assert logs.startswith("modelled run") and "run 1 ended TIMEOUT" in logs
    assert f"{int(1.0 / step_wall)} of {STEPS} steps (stopped early)" in logs

    gone = ended(server, cancelled)
    assert gone["state"] == "CANCELLED" and gone["training"]["result"]["modelled"]["steps_run"] < STEPS
    assert "run 1 ended CANCELLED" in run(server, "vipu", "logs", str(cancelled)).stdout
