"""How the CLI reaches the controller: an address that answers HTTP but not gRPC is 'unreachable' (exit 5), not
the controller's internal error (exit 1); a create is retried with the same request id while the controller is
down."""

from __future__ import annotations

import http.server
import socket
import struct
import threading

import grpc
import pytest

from tests.cli.test_cli_settings import clean_env, closed_port, error_line, vipu  # noqa: F401 - clean_env is a fixture
from vipu.cli.connection import Connection, Settings
from vipu.v1 import partition_pb2 as p

UNREACHABLE = 5


@pytest.fixture
def http_server():
    """A real http.server (HTTP/1.1) on a free port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


@pytest.fixture
def http2_server():
    """An HTTP/2 server that is not gRPC: it answers every request with status 404 and no gRPC status (as a web
    server or proxy speaking HTTP/2 would); gRPC then reports UNIMPLEMENTED, which the CLI took for the controller's
    own answer and exited 1."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(24)  # the client's preface
            conn.sendall(frame(4, 0, 0))  # our SETTINGS
            buffered = b""
            while not stop.is_set() and (data := conn.recv(65536)):
                buffered += data
                while len(buffered) >= 9 and len(buffered) >= 9 + int.from_bytes(buffered[:3], "big"):
                    length, kind, flags = int.from_bytes(buffered[:3], "big"), buffered[3], buffered[4]
                    stream = int.from_bytes(buffered[5:9], "big") & 0x7FFFFFFF
                    buffered = buffered[9 + length:]
                    if kind == 4 and not flags & 1:
                        conn.sendall(frame(4, 1, 0))  # SETTINGS ack
                    elif kind == 1:  # HEADERS: answer :status 404 (HPACK static index 13), end of stream
                        conn.sendall(frame(1, 5, stream, b"\x8d"))

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
    listener.close()
    thread.join(timeout=10)
    assert not thread.is_alive()


@pytest.mark.parametrize("peer", ["http_server", "http2_server"])
@pytest.mark.parametrize("args", [("queue",), ("create", "partition", "p", "--size", "4"),
                                  ("--timeout", "3", "submit", "--ipus", "1", "--wrap", "true")])
def test_an_address_that_answers_http_but_not_grpc_is_unreachable(request, clean_env, peer, args):  # noqa: F811
    port = request.getfixturevalue(peer)
    out = vipu(*args, env={**clean_env, "VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": str(port)})
    assert out.returncode == UNREACHABLE
    line = error_line(out)  # one line, and no retrying for --timeout: waiting does not make it a controller
    assert line.startswith(f"vipu: error: 127.0.0.1:{port} answered, but not as a V-IPU controller (")
    assert line.endswith("point --api-host and --api-port (or VIPU_CLI_API_HOST and VIPU_CLI_API_PORT) at the"
                         " controller")


class Down(grpc.RpcError):
    """What the transport raises while nothing listens."""

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "failed to connect to all addresses"

    def trailing_metadata(self):
        return ()


def test_a_create_is_retried_with_the_same_request_id_while_the_controller_is_down(capsys):
    conn = Connection("vipu", Settings("127.0.0.1", closed_port(), "u", None, None), timeout=5)
    seen = []

    def create(request, timeout, metadata):
        seen.append(request.request_id)
        if len(seen) < 3:
            raise Down()
        return p.Partition(name=request.name)

    assert conn.create(create, p.CreatePartitionRequest(name="x", size=4), check="`vipu get partition x`").name == "x"
    assert len(seen) == 3 and len(set(seen)) == 1 and len(seen[0]) == 32
    assert "is not answering; retrying for up to 5 s" in capsys.readouterr().err


class Late(Down):
    """What the transport raises when the deadline passes before the controller answers."""

    def code(self):
        return grpc.StatusCode.DEADLINE_EXCEEDED

    def details(self):
        return "Deadline Exceeded"


def test_a_change_that_missed_its_deadline_may_have_been_made_and_a_read_may_be_retried(capsys):
    """walk26f: `vipu cancel -u root` of 49,000 jobs said "retry" after its deadline, though the jobs were cancelled."""
    from vipu.v1 import job_pb2 as j

    conn = Connection("vipu", Settings("127.0.0.1", closed_port(), "u", None, None), timeout=5)

    def late(request, timeout, metadata):
        raise Late()

    for request, change in ((j.CancelJobsRequest(users=["root"]), True), (j.JobIdsRequest(ids=[7]), True),
                            (j.UpdateJobRequest(id=7), True), (j.SubmitJobsRequest(), True),
                            (j.SubmitJobRequest(validate_only=True), False), (j.ListJobsRequest(), False)):
        with pytest.raises(SystemExit) as exit_:
            conn.call(late, request)
        line = capsys.readouterr().err
        assert exit_.value.code == UNREACHABLE and line.count("\n") == 1, line
        assert ("the change may have been made all the same: check with `vipu queue -u USER` or `vipu show job ID`"
                " before trying again" in line) is change, (type(request).__name__, line)
        assert ("did not answer in time; retry, or give a longer --timeout" in line) is not change, line


class Unknown(Down):
    """What a gRPC server without the method answers: a controller of an earlier release, for ListMachines."""

    def code(self):
        return grpc.StatusCode.UNIMPLEMENTED

    def details(self):
        return "Method not found!"


def test_a_call_the_controller_does_not_know_says_it_may_be_an_earlier_release(capsys):
    """`vipu info -s` against a controller before ListMachines said only "not a V-IPU controller"."""
    conn = Connection("vipu", Settings("127.0.0.1", closed_port(), "u", None, None), timeout=5)

    def unknown(request, timeout, metadata):
        raise Unknown()

    with pytest.raises(SystemExit) as exit_:
        conn.call(unknown, p.ListMachinesRequest())
    line = capsys.readouterr().err
    assert exit_.value.code == UNREACHABLE and "does not know this call (UNIMPLEMENTED: Method not found!)" in line
    assert "a V-IPU controller of an earlier vipu-sim than this client (upgrade it" in line, line
