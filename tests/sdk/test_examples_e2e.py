"""The dogfooding check, end to end: examples/tiny_{dp,pp,tp}.sh, users' programs on the public SDK submitted as
batch scripts, train exactly as the built-in `train` workload trains examples/tiny_*.yaml on the same controller
and the same IPUs: `vipu logs --json` gives the same loss and emulated step time at every step (to 1e-9 relative;
measured: equal to the last bit for the losses, within 1e-15 relative for the times)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for

ROOT = Path(__file__).resolve().parents[2]


def batch_script(tmp_path: Path, name: str, server) -> str:
    """examples/NAME.sh as `vipu submit` sends a batch script: its #SBATCH directives (-J, --ipus, -t) as the
    job's fields, the script itself, submitted from the repository's folder with this test's interpreter first on
    PATH (it has vipu installed). Its output goes to the state folder's job-output folder, not the repository's
    slurm-N.out: a later test's job with the same id would find that file there and refuse to write over it."""
    output = server.state_dir / "job-output"
    output.mkdir(exist_ok=True)
    script = (ROOT / f"examples/{name}.sh").read_text()
    directives = dict(re.findall(r"^#SBATCH (\S+) (\S+)$", script, re.M))
    spec = {"name": directives["-J"], "ipus": int(directives["--ipus"]), "time_limit": directives["-t"],
            "output": str(output / "slurm-%j.out"),
            "workload": {"kind": "command", "script": script, "submit_dir": str(ROOT),
                         "environment": {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    return str(path)


def steps(server, job: int) -> list[dict]:
    detail = wait_for(lambda: (d := show(server, job))["state"] in ("COMPLETED", "FAILED") and d, timeout=300)
    assert detail["state"] == "COMPLETED", run(server, "vipu", "logs", str(job)).stdout[-3000:]
    return json.loads(run(server, "vipu", "logs", str(job), "--json").stdout)["steps"]


@pytest.mark.parametrize("name", ["tiny_dp", "tiny_pp", "tiny_tp"])
def test_the_example_program_equals_the_builtin_training_of_its_spec(server, tmp_path, name):
    [program] = submit(server, batch_script(tmp_path, name, server))
    mine = steps(server, program)
    [builtin] = submit(server, str(ROOT / f"examples/{name}.yaml"))  # after: on the same IPUs
    theirs = steps(server, builtin)
    assert show(server, program)["detail"]["first_ipu"] == show(server, builtin)["detail"]["first_ipu"]
    assert len(mine) == len(theirs) == 20
    for a, b in zip(mine, theirs):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-9)
        assert a["emulated_step_s"] == pytest.approx(b["emulated_step_s"], rel=1e-9)
    worst = {field: max(abs(a[field] - b[field]) / abs(b[field]) for a, b in zip(mine, theirs))
             for field in ("loss", "emulated_step_s")}
    print(name, "max relative difference:", worst)  # with -s: measured 0 for losses, <= 4e-16 for times
