"""Users' programs with machine actors: a controller attached to the test session's Ray runs a batch script on the
node of its machines, and a cancel stops its whole process group there."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, wait_for
from tests.jobs.programs.test_programs_e2e import alive, ended


@pytest.fixture
def on_ray(ray_session, server_factory):
    address = ray_session.get_runtime_context().gcs_address
    return server_factory(extra=["--ray-address", address, "--kill-wait", "1"])


def submit_script(server, tmp_path, script: str, *flags: str) -> int:
    path = tmp_path / "job.sh"
    path.write_text(script)
    out = run(server, "vipu", "submit", "-D", str(tmp_path), *flags, "--json", str(path))
    assert out.returncode == 0, out.stderr
    return int(json.loads(out.stdout)["job_ids"][0])


def test_a_script_runs_on_its_machines_node_and_a_cancel_stops_it(on_ray, tmp_path, ray_session):
    node = ray_session.get_runtime_context().get_node_id()
    job = submit_script(on_ray, tmp_path, "#!/bin/sh\n#SBATCH --ipus=4 -t 2\necho $SLURM_JOB_ID $VIPU_RAY_NODE\n")
    assert ended(on_ray, job, timeout=120)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text().split() == [str(job), node]
    deaf = submit_script(on_ray, tmp_path, "#!/bin/bash\n#SBATCH --ipus=4 -t 2\ntrap '' TERM\necho $$ > pid\n"
                                           "echo started\nsleep 300\n")
    pid = wait_for(lambda: (tmp_path / "pid").is_file() and (tmp_path / "pid").read_text().strip()
                   and int((tmp_path / "pid").read_text()), timeout=60)
    assert run(on_ray, "vipu", "logs", str(deaf)).stdout == "started\n"
    assert run(on_ray, "vipu", "cancel", str(deaf)).returncode == 0
    wait_for(lambda: not alive(pid), timeout=15)  # SIGTERM ignored: SIGKILL a second later, on the node
    wait_for(lambda: show(on_ray, deaf)["state"] == "CANCELLED")  # COMPLETING until its program is gone


def test_poprun_and_a_modelled_training_on_machine_actors(on_ray, tmp_path):
    from tests.conftest import console_script

    job = submit_script(on_ray, tmp_path, f"#!/bin/sh\n#SBATCH --ipus=4 -t 2\n{console_script('poprun')}"
                                          " --num-instances 2 --num-replicas 4 sh -c 'echo $POPDIST_REPLICA_INDEX_OFFSET'\n")
    assert ended(on_ray, job, timeout=120)["state"] == "COMPLETED"
    assert sorted((tmp_path / f"slurm-{job}.out").read_text().split()) == ["0", "2", "[0]", "[1]"]
    spec = {"name": "modelled", "ipus": 4, "time_limit": "1m", "workload": {
        "kind": "train", "execute": False, "steps": 3, "model": {"kind": "mlp", "layers": 4, "hidden": 64,
                                                                 "inputs": 32, "outputs": 10},
        "layout": {"t": 1, "p": 1, "r": 4, "micro_batch": 8, "micro_batches": 2}}}
    (tmp_path / "modelled.json").write_text(json.dumps(spec))
    out = run(on_ray, "vipu", "submit", str(tmp_path / "modelled.json"), "--json")
    [modelled] = json.loads(out.stdout)["job_ids"]
    detail = ended(on_ray, modelled, timeout=120)
    assert detail["state"] == "COMPLETED" and detail["modelled"]
    assert run(on_ray, "vipu", "logs", str(modelled)).stdout.startswith("modelled run (execute: false)")
