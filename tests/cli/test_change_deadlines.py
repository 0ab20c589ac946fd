"""A change whose deadline passes may have been made all the same (the controller goes on with it): `vipu-admin`
and `vipu`'s partition commands say so and name the command that shows it, as `vipu cancel` does, where they said
"retry" (walk27: a retried `vipu-admin fail ipus` or `create allocation` could act twice or be refused as taken).
Reads still say retry. Against a gRPC server that takes every call and answers none until the test ends."""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
import pytest
from typer.testing import CliRunner

from vipu.cli import admin_commands, vipu_app
from vipu.cli.failure import UNREACHABLE

CHANGES = [
    ("vipu-admin", ["create", "agent", "extra", "--machine", "3"], "`vipu-admin get agent extra`"),
    ("vipu-admin", ["create", "allocation", "team", "--agents", "ag00"], "`vipu-admin get allocation team`"),
    ("vipu-admin", ["create", "cluster", "c1", "--agents", "ag00"], "`vipu-admin get cluster c1`"),
    ("vipu-admin", ["create", "user", "alice"], "`vipu-admin get user alice`"),
    ("vipu-admin", ["update", "user", "alice", "--unix-user", "alice"], "`vipu-admin get user alice`"),
    ("vipu-admin", ["remove", "allocation", "team"], "`vipu-admin get allocation team`"),
    ("vipu-admin", ["drain", "agent", "ag00", "--reason", "fan"], "`vipu-admin get agent ag00`"),
    ("vipu-admin", ["resume", "agent", "ag00"], "`vipu-admin get agent ag00`"),
    ("vipu-admin", ["fail", "ipus", "5"], "`vipu info -N`"),
    ("vipu-admin", ["repair", "ipus", "5"], "`vipu info -N`"),
    ("vipu-admin", ["fail", "link", "4", "5"], "`vipu info -N`"),
    ("vipu-admin", ["kill", "machine", "1"], "`vipu info -N`"),
    ("vipu", ["create", "partition", "p1", "--size", "4"], "`vipu get partition p1`"),
    ("vipu", ["remove", "partition", "p1"], "`vipu get partition p1`"),
    ("vipu", ["reset", "partition", "p1"], "`vipu get partition p1`"),
]
READS = [("vipu-admin", ["get", "agent", "ag00"]), ("vipu-admin", ["list", "agents"])]


class Silent(grpc.GenericRpcHandler):
    """Takes every call and answers none until released."""

    def __init__(self):
        self.released = threading.Event()

    def service(self, details):
        def wait(request, context):
            self.released.wait()
            context.abort(grpc.StatusCode.UNAVAILABLE, "the test is over")

        return grpc.unary_unary_rpc_method_handler(wait)


@pytest.fixture(scope="module")
def silent_port():
    handler = Silent()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port
    handler.released.set()
    server.stop(None)


def run(prog: str, args: list[str], port: int):
    app = admin_commands.app if prog == "vipu-admin" else vipu_app.app
    return CliRunner().invoke(app, ["--api-port", str(port), "--timeout", "0.5", *args], prog_name=prog,
                              env={"COLUMNS": "200"})


@pytest.mark.parametrize("prog, args, check", CHANGES, ids=[" ".join((p, *a)) for p, a, _ in CHANGES])
def test_a_change_past_its_deadline_may_have_been_made(silent_port, prog, args, check):
    out = run(prog, args, silent_port)
    said = " ".join(out.output.split())
    assert out.exit_code == UNREACHABLE, out.output
    assert "the change may have been made all the same: check with " + check in said, said
    assert "retry" not in said, said


@pytest.mark.parametrize("prog, args", READS, ids=[" ".join((p, *a)) for p, a in READS])
def test_a_read_past_its_deadline_says_retry(silent_port, prog, args):
    out = run(prog, args, silent_port)
    said = " ".join(out.output.split())
    assert out.exit_code == UNREACHABLE and "did not answer in time; retry" in said, said
