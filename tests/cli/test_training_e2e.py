"""Training jobs end to end: `vipu submit examples/tiny_*.yaml`, the job trains on its partition, and `vipu logs`
/ `vipu show job` give its loss per step, emulated step time and the planner's prediction."""

from __future__ import annotations

import json
import signal
import stat
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from vipu.jobs.train_spec import TrainWorkload
from vipu.jobs.train.reference import train_reference

ROOT = Path(__file__).resolve().parents[2]


def finished(server, job: int, timeout: float = 120) -> dict:
    return wait_for(lambda: (d := show(server, job))["state"] in ("COMPLETED", "FAILED") and d, timeout=timeout)


def test_the_tiny_trio_trains_and_reports(server):
    kinds = ("dp", "pp", "tp", "tp2d")  # with --ray off (the server fixture's default): in-process machines
    ids = [submit(server, str(ROOT / f"examples/tiny_{kind}.yaml"))[0] for kind in kinds]
    for job, kind in zip(ids, kinds):
        detail = finished(server, job)
        assert detail["state"] == "COMPLETED", detail
        result = detail["training"]["result"]
        workload = TrainWorkload.model_validate(yaml.safe_load((ROOT / f"examples/tiny_{kind}.yaml").read_text())["workload"])
        reference, _ = train_reference(workload)
        assert np.allclose(result["losses"], reference, rtol=1e-5, atol=1e-6)  # the parallelism is real
        assert result["emulated_step_s"] > 0 and result["predicted_step_s"] > 0
        logs = run(server, "vipu", "logs", str(job))
        assert logs.returncode == 0 and logs.stdout.count("loss") == workload.steps
        assert "the planner predicted" in logs.stdout
        as_data = json.loads(run(server, "vipu", "logs", str(job), "--json").stdout)  # the same run, as data
        assert [r["loss"] for r in as_data["steps"]] == result["losses"] and as_data["run"] == 1
        # show job's times come from Durations: the same to the nanosecond
        assert as_data["result"]["emulated_step_s"] == pytest.approx(result["emulated_step_s"], abs=1e-9)
        assert "reports" not in as_data["result"]
        assert as_data["lines"] == logs.stdout.splitlines() and as_data["error"] is None
        # `vipu plan` of the spec predicts what the job reports (regression: 54.0 us planned, 7.7 us reported for
        # tiny_dp), on the spec's default Pod and on the controller's
        for pod in ([], ["--pod", "bow-pod64"]):
            planned = run(server, "vipu", "plan", str(ROOT / f"examples/tiny_{kind}.yaml"), "--json", *pod)
            assert planned.returncode == 0, planned.stderr
            planned = json.loads(planned.stdout)
            # predicted_step_s is read from its Duration: to the nanosecond
            assert planned["step_s"] == pytest.approx(result["predicted_step_s"], abs=1e-9), (kind, pod)
            assert planned["time"]["total_s"] == pytest.approx(result["predicted_step_s"], abs=1e-9)
            assert planned["time"]["data_parallel_s"] == pytest.approx(
                result["predicted_parts"]["data-parallel allreduce"], rel=1e-12)
        assert f"the planner predicted {result['predicted_step_s'] * 1e6:,.1f} us" in logs.stdout
    assert json.loads(run(server, "vipu", "list", "partitions", "--json").stdout) == []


def test_training_on_machine_actors(server_factory, tmp_path):
    """On a local Ray, the default: the one test of the suite that starts a whole one (the others attach to the
    session's, as a second local Ray beside it can miss Ray's start timeout on a loaded machine)."""
    server = server_factory(extra=["--ray", "local"])
    [job] = submit(server, str(ROOT / "examples/tiny_dp.yaml"))
    detail = finished(server, job, timeout=400)
    assert detail["state"] == "COMPLETED", (detail["training"] or {}).get("error")
    result = detail["training"]["result"]
    assert result["bytes_per_link_type"]["ipu_link"] > 0
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert all(i["emulated"] for i in ipus[:4])  # its machine's actor ran it

    # a run that starts on the machines an earlier run is still stopping on (it finishes its step first): a
    # requeued job again on its partition, and a new job on a cancelled one's. Both failed with "no tensor 'tp' on
    # IPU 0": the two runs' tensors had the same names on the same actors
    spec = yaml.safe_load((ROOT / "examples/tiny_tp.yaml").read_text())
    for name, count in (("long", 1_000_000), ("short", 2)):
        spec["workload"]["steps"] = count
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec))

    def steps(job: int) -> list[str]:
        return [line for line in run(server, "vipu", "logs", str(job)).stdout.splitlines() if line.startswith("step ")]

    [first] = submit(server, str(tmp_path / "long.yaml"))
    wait_for(lambda: len(steps(first)) >= 2, timeout=300)
    assert run(server, "vipu", "requeue", str(first)).returncode == 0
    wait_for(lambda: show(server, first)["requeue_count"] == 1 and show(server, first)["state"] == "RUNNING", 30)
    wait_for(lambda: len(steps(first)) >= 2 or show(server, first)["state"] != "RUNNING", timeout=120)
    assert show(server, first)["state"] == "RUNNING", run(server, "vipu", "logs", str(first)).stdout[-2000:]
    assert run(server, "vipu", "cancel", str(first)).returncode == 0
    [second] = submit(server, str(tmp_path / "short.yaml"))  # on the cancelled job's IPUs, at once
    detail = finished(server, second)
    assert detail["state"] == "COMPLETED", run(server, "vipu", "logs", str(second)).stdout[-2000:]
    assert detail["detail"]["first_ipu"] == show(server, first)["detail"]["first_ipu"]

    # a clean stop takes its local Ray's session folder with it (every stopped controller left ~1 MB in /tmp)
    folder = Path(f"/tmp/vipu-ray-{server.proc.pid}")
    assert folder.exists()
    # its user's alone: Ray makes its own folders, inside, open to every user (walk44)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and (folder / "ray" / "session_latest" / "sockets").is_dir()
    server.kill(signal.SIGTERM)
    assert server.proc.returncode == 0 and not folder.exists()


def test_per_ipu_usage_is_shown_by_show_job_and_logs(server, tmp_path):
    spec = yaml.safe_load((ROOT / "examples/tiny_dp.yaml").read_text())
    spec["workload"]["steps"] = 3
    (tmp_path / "dp.yaml").write_text(yaml.safe_dump(spec))
    spec.update(ipus=1, name="one")
    spec["workload"]["layout"]["r"] = 1
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(spec))
    dp, one = (submit(server, str(tmp_path / f"{name}.yaml"))[0] for name in ("dp", "one"))
    detail = finished(server, dp)
    assert detail["state"] == "COMPLETED"
    usage = detail["ipu_usage"]  # a list in --json, kept after the run (the machines' gauges are 0 by then)
    assert [u["ipu"] for u in usage] == [0, 1, 2, 3] and all(0 < u["utilisation"] <= 1 for u in usage)
    assert all(u["sram_peak_bytes"] > u["activation_peak_bytes"] > 0 for u in usage)
    text = run(server, "vipu", "show", "job", str(dp)).stdout
    logs = run(server, "vipu", "logs", str(dp)).stdout
    for shown in (text, logs):
        rows = [line.split() for line in shown.splitlines()]
        header = rows.index(["IPU", "MACHINE", "UTIL", "SRAM", "PEAK", "ACTIVATIONS"])
        assert [row[:3] for row in rows[header + 1: header + 5]] == [
            [str(u["ipu"]), "0", f"{u['utilisation']:.2%}"] for u in usage]
    assert finished(server, one)["state"] == "COMPLETED"
    assert "link traffic: none" in run(server, "vipu", "logs", str(one)).stdout.splitlines()
