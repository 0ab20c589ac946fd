"""deploy/systemd: the units pass systemd's own checks (verify, and `security` at OK or better), run Ray in the
foreground where systemd supervises it, run the controller hardened as its own user over TLS, and give commands
our programs accept. tests/deploy/test_service.py runs their command lines."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vipu.server.app import is_loopback, parse_bundle
from vipu.server.arguments import parse_args

UNITS = Path(__file__).resolve().parents[2] / "deploy/systemd"
VENV_BIN = "/opt/vipu-sim/.venv/bin"
HARDENING = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
             "PrivateDevices": "yes", "CapabilityBoundingSet": "", "User": "vipu", "UMask": "0077"}


def unit(name: str) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values, in order]}}: systemd lets a key repeat (SystemCallFilter=), configparser does not."""
    sections: dict[str, dict[str, list[str]]] = {}
    section = None
    for line in (UNITS / name).read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("["):
            section = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        section.setdefault(key.strip(), []).append(value.strip())
    return sections


def exec_start(name: str) -> list[str]:
    [command] = unit(name)["Service"]["ExecStart"]
    return shlex.split(command)  # as systemd splits it: quotes around a whole word are removed


def environment(name: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for line in unit(name)["Service"].get("Environment", [])
                for pair in shlex.split(line))


@pytest.mark.parametrize("name", ["vipu-server.service", "ray-head.service"])
def test_units_are_hardened(name):
    service = unit(name)["Service"]
    assert {k: service[k][-1] for k in HARDENING} == HARDENING
    assert "WantedBy" in unit(name)["Install"]


def test_ray_head_runs_in_the_foreground_under_systemd():
    service = unit("ray-head.service")["Service"]
    assert service["Type"] == ["simple"]
    words = exec_start("ray-head.service")
    assert words[0] == f"{VENV_BIN}/ray" and words[1:4] == ["start", "--head", "--block"]
    resources = next(w for w in words if w.startswith("--resources="))  # JSON, as ray start parses it
    assert json.loads(resources.partition("=")[2])["ipu_host"] >= 1
    assert environment("ray-head.service")["RAY_AUTH_MODE"] == "token"
    # the token is made before the start and never printed (the journal would keep it)
    [pre] = service["ExecStartPre"]
    assert "get-auth-token --generate" in pre and pre.endswith("> /dev/null'")


def test_the_controller_unit_serves_securely_beside_its_ray_head():
    words = exec_start("vipu-server.service")
    assert words[0] == f"{VENV_BIN}/vipu-server"
    args = parse_args(words[1:])
    assert args.secure and not is_loopback(args.host) and args.tls_cert and args.tls_key  # beyond loopback: TLS
    assert args.port == 8090 and args.metrics_port == 9105 and args.log_format == "json"
    head_port = next(w for w in exec_start("ray-head.service") if w.startswith("--port=")).partition("=")[2]
    assert args.ray == f"127.0.0.1:{head_port}" and args.ray_wait > 0
    assert parse_bundle(args.machine_bundle) == {"ipu_host": 1.0}
    service = unit("vipu-server.service")
    # its state in its StateDirectory (the one place it may write); Ray's session and token are the head's
    assert str(args.state_dir).startswith(f"/var/lib/{service['Service']['StateDirectory'][0]}/")
    assert service["Unit"]["JoinsNamespaceOf"] == ["ray-head.service"]  # Ray's session in the head's private /tmp
    ray_home = environment("ray-head.service")["HOME"]
    assert environment("vipu-server.service")["RAY_AUTH_TOKEN_PATH"] == f"{ray_home}/.ray/auth_token"
    assert "ray-head.service" in service["Unit"]["After"][0] and service["Service"]["Restart"] == ["always"]
    assert service["Service"]["RestartPreventExitStatus"] == ["2"]  # a refusal to start would only loop


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed here")
@pytest.mark.parametrize("name", ["vipu-server.service", "ray-head.service"])
def test_systemd_verifies_them_and_rates_their_exposure_ok_or_better(name, tmp_path):
    for each in UNITS.glob("*.service"):  # both: the controller's requires the head's
        # with the venv where /opt/vipu-sim/.venv would be, so the programs exist
        (tmp_path / each.name).write_text(each.read_text().replace(VENV_BIN, str(Path(sys.executable).parent)))
    out = subprocess.run(["systemd-analyze", "verify", str(tmp_path / name)], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.returncode == 0 and "error" not in out.stderr.lower(), out.stderr
    out = subprocess.run(["systemd-analyze", "security", "--offline=true", str(UNITS / name)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    level, word = re.search(r"Overall exposure level for \S+: ([\d.]+) (\w+)", out.stdout).groups()
    assert word in ("OK", "SAFE", "PERFECT") and float(level) <= 3.9, out.stdout
