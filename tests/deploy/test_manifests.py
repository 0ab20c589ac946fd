"""deploy/: the KubeRay RayCluster and the systemd units are valid, and the commands in them are ones our
programs accept."""

from __future__ import annotations

import configparser
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import ray
import yaml

from vipu.server.app import parse_args, parse_bundle

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def vipu_server_args(command: str) -> list[str]:
    words = shlex.split(command)
    start = next(i for i, w in enumerate(words) if w.endswith("vipu-server"))
    return [w for w in words[start + 1:] if w not in (">", "2>&1", "&") and not w.startswith("/var/log")]


def test_kuberay_raycluster():
    spec, claim = yaml.safe_load_all((DEPLOY / "kuberay/raycluster.yaml").read_text())
    assert spec["apiVersion"] == "ray.io/v1" and spec["kind"] == "RayCluster"
    assert spec["spec"]["rayVersion"] == ray.__version__
    head = spec["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {p["containerPort"] for p in head["ports"]} == {6379, 8090, 9105}
    command = head["lifecycle"]["postStart"]["exec"]["command"][-1]
    args = parse_args(vipu_server_args(command))
    assert args.ray == "auto" and parse_bundle(args.machine_bundle) == {"ipu_host": 1.0}
    # the ports it declares are reachable from outside the pod (regression: /metrics listened on 127.0.0.1 only)
    assert args.host == args.metrics_host == "0.0.0.0" and args.secure and args.metrics_port == 9105
    # and the claim its state lives on is in the manifest
    [volume] = spec["spec"]["headGroupSpec"]["template"]["spec"]["volumes"]
    assert claim["kind"] == "PersistentVolumeClaim" and claim["metadata"]["name"] == volume["persistentVolumeClaim"][
        "claimName"]
    [workers] = spec["spec"]["workerGroupSpecs"]
    resources = json.loads(json.loads(workers["rayStartParams"]["resources"]))
    assert resources["ipu_host"] >= 1 and workers["minReplicas"] <= workers["replicas"] <= workers["maxReplicas"]


@pytest.mark.parametrize("unit", ["vipu-server.service", "ray-head.service"])
def test_systemd_units(unit, tmp_path):
    text = (DEPLOY / "systemd" / unit).read_text()
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    assert {"Unit", "Service", "Install"} <= set(parser.sections())
    exec_start = parser["Service"]["ExecStart"]
    if unit == "vipu-server.service":
        args = parse_args(vipu_server_args(exec_start))
        assert args.secure and args.port == 8090 and args.metrics_port == 9105
    else:
        words = shlex.split(exec_start)  # as systemd splits it: quotes around a whole word are removed
        assert words[1:3] == ["start", "--head"]
        resources = next(w for w in words if w.startswith("--resources="))  # JSON, as ray start parses it
        assert json.loads(resources.partition("=")[2])["ipu_host"] >= 1
    if shutil.which("systemd-analyze"):  # the real verifier, with the venv where /opt/vipu-sim/.venv would be
        local = tmp_path / unit
        local.write_text(text.replace("/opt/vipu-sim/.venv/bin", str(Path(sys.executable).parent)))
        out = subprocess.run(["systemd-analyze", "verify", str(local)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "error" not in out.stderr.lower(), out.stderr
