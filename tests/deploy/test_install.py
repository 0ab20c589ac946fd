"""`pip install vipu-sim` gives the `vipu` CLI alone: no Ray, no numpy (the controller's are the `server` extra)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/tiny_dp.yaml"

# Run `vipu ARGS` with Ray and numpy impossible to import: a meta-path finder that refuses them before any other.
BLOCKED = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("ray", "numpy"):
            raise ImportError(f"{name} is blocked: the CLI must not import it")

sys.meta_path.insert(0, Refuse())
"""
IMPORT_ALL = BLOCKED + """
import importlib, pkgutil
import vipu.cli, vipu.client
for package in (vipu.cli, vipu.client):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("ray", "numpy")))
"""
RUN_VIPU = BLOCKED + """
from vipu.cli.main import run
sys.argv = ["vipu", *sys.argv[1:]]
run()
"""


def blocked_vipu(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN_VIPU, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_every_cli_module_imports_without_ray_or_numpy():
    out = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_cli_commands_run_without_ray_or_numpy(server):
    assert blocked_vipu("--help").returncode == 0
    # the planner's formulas are plain Python: only the emulation moves numpy arrays
    plan = blocked_vipu("plan", str(EXAMPLE), "--json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["fits"] is True, plan.stderr
    submitted = blocked_vipu("submit", "--ipus", "4", "--time-limit", "5m", "--parsable", env=server.env())
    assert submitted.returncode == 0, submitted.stderr
    queue = blocked_vipu("queue", "--json", env=server.env())
    assert queue.returncode == 0, queue.stderr
    assert [j["job_id"] for j in json.loads(queue.stdout)["jobs"]] == [int(submitted.stdout)]


def test_pip_install_without_extras_gives_a_working_cli(server, tmp_path):
    """A fresh venv, the package as a user gets it (a copy of the source, not an editable install), no extras."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "vipu", source / "vipu", ignore=shutil.ignore_patterns("__pycache__"))
    env_dir = tmp_path / "venv"
    # pip of the test's own venv installs into the fresh one (pip --python): a pip of the fresh venv's own (ensurepip)
    # cost a third of the test, and the user's pip is not what is tested
    venv.create(env_dir)
    bin_dir = env_dir / "bin"
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python")]
    installed = subprocess.run([*pip, "install", "--quiet", str(source)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    listed = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True, timeout=60, check=True)
    packages = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"vipu-sim", "grpcio", "typer"} <= packages
    assert not packages & {"ray", "numpy", "prometheus-client"}, packages

    trace = tmp_path / "trace.csv"  # openb's columns; `vipu simulate` replays it with the scheduler's own code
    trace.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
                     "scheduled_time\np0,1000,1024,1,1000,,LS,Running,0,600,0\np1,1000,1024,2,1000,,LS,Running,10,900,10\n")
    env = {**server.env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    version = subprocess.run([str(bin_dir / "vipu"), "--server-version"], capture_output=True, text=True,
                             timeout=60, env=env)
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stdout + version.stderr
    for args in (["submit", "--ipus", "4", "--time-limit", "5m"], ["queue"], ["plan", str(EXAMPLE)],
                 ["simulate", "--trace", str(trace), "--pod", "bow-pod16", "--policy", "fifo"]):
        out = subprocess.run([str(bin_dir / "vipu"), *args], capture_output=True, text=True, timeout=60, env=env)
        assert out.returncode == 0, (args, out.stderr)
    # the controller, installed without its extra, says what to install
    server_cmd = subprocess.run([str(bin_dir / "vipu-server"), "--version"], capture_output=True, text=True,
                                timeout=60)
    assert server_cmd.returncode == 2  # something to fix before it can start, as a bad flag
    assert server_cmd.stderr.strip().endswith("run `pip install 'vipu-sim[server]'`"), server_cmd.stderr
    assert "ray" in server_cmd.stderr.split(" not installed")[0] and "numpy" in server_cmd.stderr  # named, all


@pytest.mark.parametrize("name", ["ray", "numpy"])
def test_the_server_extra_holds_what_the_cli_does_without(name):
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith(name)]
    assert [d for d in project["optional-dependencies"]["server"] if d.startswith(name)]
