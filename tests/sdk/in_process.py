"""A DeviceService for one session in the test's own process: the SDK talks gRPC to it as a program talks to its
controller, without a controller (no queue, no job: the session is made here)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from types import SimpleNamespace

from vipu.control.device_ops import DeviceOps
from vipu.jobs.sessions.tensor_memory import TensorMemory
from vipu.jobs.sessions.tokens import Sessions
from vipu.server.device_server import build_device_server


@contextmanager
def served(session, env: dict[str, str] | None = None, memory: TensorMemory | None = None):
    """Serve `session` on a free port; the SDK's environment (VIPU_*) is set while inside. Yields the token.
    `memory`: the controller's tensor memory (default: its default budget)."""
    sessions = Sessions(memory)
    token = sessions.open(session)
    server, port = build_device_server(SimpleNamespace(devices=DeviceOps(sessions)), "127.0.0.1", 0, threads=8)
    server.start()
    saved = dict(os.environ)
    os.environ.update({"VIPU_DEVICE_ADDRESS": f"127.0.0.1:{port}", "VIPU_RUN_TOKEN": token,
                       "VIPU_PARTITION_IPUS": str(session.size), **(env or {})})
    for name in [k for k in os.environ if k.startswith("POPDIST_") and k not in (env or {})]:
        del os.environ[name]
    try:
        yield token
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sessions.close_all("the test is over")
        server.stop(0)
