"""Shared fixtures: a real vipu-server process (the installed console script) on a free port."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vipu.jobs.programs.spool import discard

BIN = Path(sys.executable).parent
LISTENING = re.compile(r"listening on (\S+):(\d+)")
METRICS = re.compile(r"metrics on (http://\S+/metrics)")
DEVICE = re.compile(r"IPUs served on ([^\s;]+)")


def console_script(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed in {BIN}; run `make test` (it installs the package)"
    return str(path)


@dataclass
class ServerProcess:
    """One vipu-server; restart() starts it again on the same state folder (and, when it can, the same port)."""

    state_dir: Path
    pod: str = "bow-pod64"
    port: int = 0
    metrics_url: str = ""
    device_address: str = ""  # the DeviceService's host:port ("" when it is off)
    listening: str = ""  # its first line: where it listens, what it runs
    proc: subprocess.Popen | None = None
    extra: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.state_dir.parent / f"{self.state_dir.name}.stderr"

    def stderr_text(self) -> str:
        """What the controller wrote on stderr so far (every start of it): its log and its refusals."""
        return self.log_path.read_text() if self.log_path.exists() else ""

    def start(self, timeout: float = 60.0) -> ServerProcess:
        if "local" in self.extra:  # a local Ray can take 30 s to start on a loaded machine, up to three times: the
            timeout = max(timeout, 180.0)  # controller retries a start that timed out (fleet._start_local_ray)
        cmd = [console_script("vipu-server"), "--pod", self.pod, "--port", str(self.port), "--state-dir",
               str(self.state_dir), "--metrics-port", "0",
               *([] if {"--ray", "--ray-address"} & set(self.extra) else ["--ray", "off"]), *self.extra]
        # its log (stderr) to a file: a pipe nobody reads would stop the controller once 64 KB of lines filled it
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        match = LISTENING.search(line)
        if not match:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise RuntimeError(f"vipu-server did not start: {line!r} {self.stderr_text()[-2000:]}")
        self.port = int(match.group(2))
        self.listening = line
        metrics = METRICS.search(line)
        self.metrics_url = metrics.group(1) if metrics else ""
        device = DEVICE.search(line)
        self.device_address = device.group(1) if device else ""
        with grpc.insecure_channel(self.address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a graceful stop that hangs must not fail the test that used it
                self.proc.kill()
                self.proc.wait(timeout=30)

    def restart(self) -> ServerProcess:
        """Stopped, then started on its port again; on another if a process took that port meanwhile (a connection
        of another test's picks its source port from the range port 0 was given from), as an operator would."""
        self.kill()
        try:
            return self.start()
        except RuntimeError as e:
            if "the port is in use" not in str(e):
                raise
        self.port = 0
        return self.start()

    def env(self) -> dict[str, str]:
        return {**os.environ, "VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": str(self.port)}


@pytest.fixture
def server_factory(tmp_path):
    started: list[ServerProcess] = []

    def make(pod: str = "bow-pod64", state_dir: Path | None = None, extra: list[str] | None = None) -> ServerProcess:
        server = ServerProcess(state_dir=state_dir or tmp_path / f"state{len(started)}", pod=pod, extra=extra or [])
        started.append(server)
        return server.start()

    yield make
    for server in started:
        server.kill(signal.SIGTERM)
        server.proc.stdout.close()
        discard(server.state_dir)  # what a run's end left for a restart there will be none of


@pytest.fixture
def server(server_factory) -> ServerProcess:
    return server_factory()


@pytest.fixture(scope="module")
def unchanged_server(tmp_path_factory) -> ServerProcess:
    """One controller for the tests of a module that leave it as they found it (refusals, reads): its start costs
    more than such a test's own calls. A test that changes a controller takes `server`, a fresh one."""
    server = ServerProcess(state_dir=tmp_path_factory.mktemp("unchanged") / "state").start()
    yield server
    server.kill(signal.SIGTERM)
    server.proc.stdout.close()
    discard(server.state_dir)


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (ray.init costs ~4 s here); tests create only the actors they need
    and kill them when done."""
    import ray

    temp_dir = f"/tmp/vipu-ray-{os.getpid()}"  # short: Ray's socket paths must fit in 107 characters
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir,
             configure_logging=False)
    yield ray
    ray.shutdown()
    subprocess.run(["rm", "-rf", temp_dir], check=False)
