"""The controller brought up as the systemd units and the KubeRay container start it: their own command lines and
environment (paths and ports moved into the test's folder), against a Ray head started as the unit or KubeRay
starts it, checked as an operator would: health over TLS, /healthz, /metrics with the admin's key, a submitted job
that runs to its end, and the lifecycle lines of its JSON log."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import LISTENING, METRICS
from tests.cli.test_jobs_e2e import wait_for
from tests.deploy.test_systemd import VENV_BIN, environment, exec_start, unit

ROOT = Path(__file__).resolve().parents[2]
BIN = str(Path(sys.executable).parent)


def clean_environment() -> dict[str, str]:
    """This process's environment without Ray's variables: a Ray this test session started set RAY_AUTH_MODE here,
    and a unit or a container starts without it."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """Distinct free ports: each socket stays bound until all are chosen (one closed at a time may be handed out
    again, and Ray refused a dashboard agent given its dashboard's port)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def moved(words: list[str], places: dict[str, str]) -> list[str]:
    """The words with each deployment path or port replaced by the test's (longest first)."""
    out = []
    for word in words:
        for old in sorted(places, key=len, reverse=True):
            word = word.replace(old, places[old])
        out.append(word)
    return out


def tls_pair(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(folder / "tls.key"),
                    "-out", str(folder / "tls.crt"), "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost"], check=True, capture_output=True, timeout=60)
    return folder / "tls.crt"


class RayHead:
    """`ray start --head --block`, in a session of its own so every process it starts ends with it."""

    def __init__(self, words: list[str], env: dict[str, str], port: int, folder: Path):
        # test-only: its own session folder and ports, so it meets no other Ray on this machine
        client, agent, dashboard = free_ports(3)
        words = [*words, f"--temp-dir=/tmp/vipu-svc-{os.getpid()}-{port}", f"--ray-client-server-port={client}",
                 f"--dashboard-agent-listen-port={agent}", f"--dashboard-port={dashboard}"]
        self.log = open(folder / "ray-head.log", "w")
        self.proc = subprocess.Popen(words, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.port = port

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # --block: Ray drains and ends its processes
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever is left of its session
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)
        self.log.close()


class Controller:
    def __init__(self, words: list[str], env: dict[str, str], folder: Path):
        self.log_path = folder / "vipu-server.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(words, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        self.port = 0
        self.metrics_url = ""

    def listening(self, timeout: float) -> None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        assert LISTENING.search(line), f"{line!r} {self.log_path.read_text()[-3000:]}"
        self.port = int(LISTENING.search(line).group(2))
        self.metrics_url = METRICS.search(line).group(1).replace("0.0.0.0", "127.0.0.1")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.proc.stdout.close()

    def events(self) -> list[dict]:
        lines = [json.loads(line) for line in self.log_path.read_text().splitlines() if line.startswith("{")]
        return [x for x in lines if "event" in x]


def check_serving(controller: Controller, cert: Path, state: Path) -> None:
    """Health over TLS, /healthz, a job submitted with the admin's key that runs to its end, and /metrics."""
    with grpc.secure_channel(f"localhost:{controller.port}", grpc.ssl_channel_credentials(cert.read_bytes())) as ch:
        reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    healthz = controller.metrics_url.removesuffix("/metrics") + "/healthz"
    with urllib.request.urlopen(healthz, timeout=10) as answer:
        assert answer.read() == b"SERVING\n"
    key = (state / "admin.key").read_text().strip()
    env = {**os.environ, "VIPU_CLI_API_HOST": "localhost", "VIPU_CLI_API_PORT": str(controller.port),
           "VIPU_CLI_TLS_CA": str(cert), "VIPU_CLI_API_ACCESS_KEY": key}

    def vipu(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([f"{BIN}/vipu", *args], capture_output=True, text=True, env=env, timeout=120)

    submitted = vipu("submit", "--ipus", "4", "--time-limit", "5m", "--duration", "1s", "--parsable")
    assert submitted.returncode == 0, submitted.stderr
    job = int(submitted.stdout)

    def ended() -> bool:
        out = vipu("history", "--json")
        return out.returncode == 0 and [(x["id"], x["state"]) for x in json.loads(out.stdout)] == [(job, "COMPLETED")]

    wait_for(ended, timeout=180)
    request = urllib.request.Request(controller.metrics_url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        metrics = answer.read().decode()
    assert 'vipu_job_completions_total{state="COMPLETED"} 1.0' in metrics and "vipu_build_info{" in metrics
    assert "vipu_store_writable 1.0" in metrics and "process_resident_memory_bytes" in metrics
    seen = {(x["event"], x.get("job_id")) for x in controller.events()}
    assert {("job_submitted", job), ("job_started", job), ("job_ended", job)} <= seen


def test_the_systemd_units_command_lines_serve(tmp_path):
    """ray-head.service's ExecStartPre and ExecStart, then vipu-server.service's ExecStart, each with its unit's
    Environment=, as systemd would run them (After=: the head first)."""
    ray_port = free_port()
    places = {VENV_BIN: BIN, "/var/lib/ray": str(tmp_path / "ray"), "/var/lib/vipu": str(tmp_path / "vipu"),
              "/etc/vipu/tls": str(tmp_path / "tls"), "--port=6379": f"--port={ray_port}",
              "127.0.0.1:6379": f"127.0.0.1:{ray_port}"}
    cert = tls_pair(tmp_path / "tls")
    for state in ("ray", "vipu"):  # StateDirectory=: made by systemd, the user's own, 0700
        (tmp_path / state).mkdir(mode=0o700)
    ray_env = {**clean_environment(), **{k: moved([v], places)[0] for k, v in environment("ray-head.service").items()}}
    [pre] = unit("ray-head.service")["Service"]["ExecStartPre"]
    subprocess.run(moved([pre], places)[0].split(" ", 2)[2].strip("'"), shell=True, env=ray_env, check=True,
                   timeout=120)
    assert (tmp_path / "ray/.ray/auth_token").exists()  # where the controller's RAY_AUTH_TOKEN_PATH points
    head = RayHead(moved(exec_start("ray-head.service"), places), ray_env, ray_port, tmp_path)
    controller = None
    try:
        words = moved(exec_start("vipu-server.service"), places)
        words = [w if w not in ("8090", "8091", "9105") else "0" for w in words]
        env = {"PATH": os.environ["PATH"],
               **{k: moved([v], places)[0] for k, v in environment("vipu-server.service").items()}}
        controller = Controller(words, env, tmp_path)
        controller.listening(timeout=240)
        check_serving(controller, cert, tmp_path / "vipu/state")
    finally:
        if controller is not None:
            controller.stop()
        head.stop()


def test_the_kuberay_containers_command_line_serves_started_before_ray(tmp_path):
    """The head pod's vipu-server container: its command and args, started before the Ray head (containers of a
    pod start together), which it waits for (--ray-wait); the head as KubeRay starts it from rayStartParams."""
    cluster = next(yaml.safe_load_all((ROOT / "deploy/kuberay/raycluster.yaml").read_text()))
    head_group = cluster["spec"]["headGroupSpec"]
    [container] = [c for c in head_group["template"]["spec"]["containers"] if c["name"] == "vipu-server"]
    ray_port = free_port()
    places = {"/var/lib/vipu": str(tmp_path / "vipu"), "/etc/vipu/tls": str(tmp_path / "tls"),
              "127.0.0.1:6379": f"127.0.0.1:{ray_port}"}
    cert = tls_pair(tmp_path / "tls")
    (tmp_path / "vipu").mkdir(mode=0o770)  # the claim's volume: group-writable (fsGroup), not the controller's own
    words = moved([f"{BIN}/{container['command'][0]}", *container["args"]], places)
    words = [w if w not in ("8090", "8091", "9105") else "0" for w in words]
    home = {"HOME": str(tmp_path / "home")}  # the image's user: no Ray token of its own, nor has the head
    controller = Controller(words, {"PATH": os.environ["PATH"], **home}, tmp_path)
    head = None
    try:
        wait_for(lambda: (tmp_path / "vipu/state/vipu.sqlite3").exists())  # its state is open: it waits for Ray
        assert controller.proc.poll() is None and not select.select([controller.proc.stdout], [], [], 0)[0]
        params = [f"--{k}={v}" for k, v in head_group["rayStartParams"].items()]
        head = RayHead([f"{BIN}/ray", "start", "--head", "--block", f"--port={ray_port}", *params],
                       {**clean_environment(), **home}, ray_port, tmp_path)
        controller.listening(timeout=240)
        check_serving(controller, cert, tmp_path / "vipu/state")
    finally:
        controller.stop()
        if head is not None:
            head.stop()


def test_ray_wait_is_refused_where_there_is_nothing_to_wait_for_and_a_stop_ends_the_wait(tmp_path):
    base = [f"{BIN}/vipu-server", "--port", "0", "--metrics-port", "-1", "--state-dir", str(tmp_path / "s")]
    for ray, wait in (("auto", "10"), ("local", "10"), (f"127.0.0.1:{free_port()}", "-1")):
        out = subprocess.run([*base, "--ray", ray, "--ray-wait", wait], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stderr.startswith(f"vipu-server: error: --ray-wait {wait} --ray {ray}:")
    # nothing answers: it waits, and a SIGTERM meanwhile stops it cleanly, having served nothing
    log = tmp_path / "waiting.log"
    with open(log, "w") as err:
        waiting = subprocess.Popen([*base, "--ray", f"127.0.0.1:{free_port()}", "--ray-wait", "300", "--log-format",
                                    "text"], stdout=subprocess.PIPE, stderr=err, text=True)
    wait_for(lambda: "waiting up to 300 s for the Ray head" in log.read_text())  # its stop signals are set

    assert waiting.poll() is None
    waiting.send_signal(signal.SIGTERM)
    out, _ = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and "nothing was served" in log.read_text() and "listening" not in out
