"""deploy/container/Containerfile: the image of the controller and the Ray nodes, pinned as the project is. (No
container engine runs here; what can be checked without building is.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from vipu import __version__

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "deploy/container/Containerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, its arguments) in order, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", CONTAINERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def ray_pin() -> str:
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["server"]
    [pin] = [d for d in server if d.startswith("ray==")]
    return pin.removeprefix("ray==")


def test_the_image_installs_the_server_extra_and_ray_default_at_the_projects_pin():
    steps = instructions()
    args = dict(a.split("=", 1) for kind, a in steps if kind == "ARG")
    assert args["RAY_VERSION"] == ray_pin()
    [install] = [a for kind, a in steps if kind == "RUN" and "pip install" in a]
    assert '".[server]"' in install and '"ray[default]==${RAY_VERSION}"' in install
    # the Python of the image is one the project supports
    [base] = [a for kind, a in steps if kind == "FROM"]
    minor = re.match(r"python:3\.(\d+)", base).group(1)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert int(minor) >= int(requires.removeprefix(">=3."))
    # what it copies is what `pip install .` needs, and .dockerignore lets exactly that into the build context
    copied = {source for kind, a in steps if kind == "COPY" for source in a.split()[:-1]}
    assert copied == {"pyproject.toml", "README.md", "vipu"}
    allowed = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "vipu"}
    # never root
    assert [a for kind, a in steps if kind == "USER"][-1] == "1000"


def test_the_raycluster_runs_this_image_at_vipu_sims_version_and_rays_pin():
    spec = next(yaml.safe_load_all((ROOT / "deploy/kuberay/raycluster.yaml").read_text()))
    assert spec["spec"]["rayVersion"] == ray_pin()
    groups = [spec["spec"]["headGroupSpec"], *spec["spec"]["workerGroupSpecs"]]
    images = {c["image"] for g in groups for c in g["template"]["spec"]["containers"]}
    assert images == {f"vipu-sim:{__version__}"}
