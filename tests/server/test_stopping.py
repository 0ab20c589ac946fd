"""A SIGTERM stops the controller within a bound, whatever it lands on (vipu/server/stopping.py): a main thread
inside the stop Event's lock, a stderr that takes nothing more."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from contextlib import suppress

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import console_script

BOUND_S = 60.0  # generous: the stop takes well under a second, and a stop that gives up under 15


def test_a_signal_landing_while_the_main_thread_holds_the_stop_events_lock_still_stops():
    """Regression: the handler set the Event itself, and waited for ever for the lock its own thread held (a
    controller's stop.wait() holds it for a few bytecodes before it sleeps; on a loaded machine SIGTERM came
    there once, and the controller hung silently until the fixture's SIGKILL)."""
    script = textwrap.dedent("""
        import os, signal
        from vipu.server.stopping import StopSignals

        signals = StopSignals()
        signals.install()
        with signals.stop._cond:  # as stop.wait() holds it before it sleeps
            os.kill(os.getpid(), signal.SIGTERM)  # its handler runs here, in this thread
        print(signals.stop.wait(30), signals.now.is_set())
        os.kill(os.getpid(), signal.SIGTERM)
        print(signals.now.wait(30))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=BOUND_S)
    assert out.stdout.split() == ["True", "False", "True"], out.stderr


def test_a_controller_whose_stderr_takes_nothing_more_stops_on_sigterm(tmp_path):
    """Regression: its log's writer blocked in a write to a pipe nobody read, and the interpreter's exit waited for
    that thread for ever. The stop now gives its last lines a few seconds, and exits without them."""
    read, write = os.pipe()
    proc = subprocess.Popen([console_script("vipu-server"), "--port", "0", "--metrics-port", "0", "--state-dir",
                             str(tmp_path / "state"), "--ray", "off", "--log-level", "debug"],
                            stdout=subprocess.PIPE, stderr=write, text=True)
    try:
        port = re.search(r"listening on \S+:(\d+)", proc.stdout.readline()).group(1)
        filling = os.open(f"/proc/self/fd/{write}", os.O_WRONLY | os.O_NONBLOCK)  # the controller's end blocks
        with suppress(BlockingIOError):
            while True:  # the pipe filled: nobody reads it
                os.write(filling, b"x" * 4096)
        os.close(filling)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:  # a call logs a line (debug): the log's writer
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)  # blocks on it
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=BOUND_S) == 0
        assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["controller.lock", "spool", "state.id",
                                                                          "vipu.sqlite3"]  # the store closed
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        os.close(read)
        os.close(write)
