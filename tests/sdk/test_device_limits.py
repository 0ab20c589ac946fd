"""What one program may hold of the DeviceService every program shares: its run's calls in flight are capped
(calls_in_flight.py), so another run's calls are answered while it waits; a wait's timeout_s is capped; the SDK's
own use stays under the cap; and a put past the controller's tensor memory is refused to the program."""

from __future__ import annotations

import threading
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace

import grpc
import numpy as np
import pytest

import vipu.sdk as ipu
from vipu.sdk.device import Device
from vipu.sdk.device_channel import Connection, from_environment
from vipu.control.device_ops import DeviceOps
from vipu.errors import ResourceExhausted
from vipu.jobs.sessions.tensor_memory import TensorMemory
from vipu.jobs.sessions.tokens import Sessions
from vipu.server.calls_in_flight import MAX_DEVICE_THREADS, CallsInFlight, default_threads
from vipu.server.device_server import build_device_server
from vipu.server.device_service import TOKEN_METADATA
from vipu.v1 import device_pb2 as d
from vipu.v1 import device_pb2_grpc

from tests.jobs.sessions.builders import session
from tests.jobs.sessions.test_rendezvous import in_threads
from tests.sdk.in_process import served

THREADS = 8


@contextmanager
def device_server(sessions: Sessions, threads: int = THREADS):
    server, port = build_device_server(SimpleNamespace(devices=DeviceOps(sessions)), "127.0.0.1", 0, threads=threads)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield device_pb2_grpc.DeviceServiceStub(channel)
    finally:
        channel.close()
        sessions.close_all("the test is over")
        server.stop(0)


def as_run(token: str):
    return ((TOKEN_METADATA, token),)


def test_one_runs_waiting_receives_leave_another_runs_attach_answered_and_the_rest_refused_at_once():
    """Regression (security walk): a 2-IPU job's 64 raw Recv calls whose send never came held all 32 threads, and
    another user's Attach went unanswered for 90 s."""
    sessions = Sessions()
    bob_session = session(first=0, size=2, job_id=7)
    bob, alice = sessions.open(bob_session), sessions.open(session(first=4, size=4, job_id=8))
    limit = CallsInFlight(THREADS).limit(2)
    assert limit == THREADS // 2  # half the threads: 2 per IPU + 2 would be 6
    extra = 3
    with device_server(sessions) as stub:
        answered = threading.Semaphore(0)
        calls = [stub.Recv.future(d.RecvRequest(name="never", src=[0], dst=[1], timeout_s=240), timeout=60,
                                  metadata=as_run(bob)) for _ in range(limit + extra)]
        for call in calls:
            call.add_done_callback(lambda _: answered.release())
        for _ in range(extra):  # refused at once, while the others wait for a send that never comes
            assert answered.acquire(timeout=30)
        refused = [call for call in calls if call.done()]
        assert len(refused) == extra
        for call in refused:
            assert call.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert (f"Recv: job 7's run 1 has {limit} DeviceService calls in flight or waiting, its limit (2 per IPU of"
                    " its 2-IPU partition + 2, at most half the server's 8 threads)") in call.details()
            assert "make one call at a time per instance or IPU group" in call.details()
        info = stub.Attach(d.AttachRequest(), metadata=as_run(alice), timeout=10)  # another run: answered
        assert (info.job_id, info.size) == (8, 4)
        with pytest.raises(grpc.RpcError) as more:  # and any more of Bob's, at once
            stub.GetTensors(d.TensorsRequest(name="w", ipus=[0]), metadata=as_run(bob), timeout=10)
        assert more.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        sessions.close(bob, "job 7 was cancelled")
        for call in calls:
            if call not in refused:
                assert call.exception(timeout=30).code() == grpc.StatusCode.FAILED_PRECONDITION
        assert stub.Attach(d.AttachRequest(), metadata=as_run(alice), timeout=10).job_id == 8


@pytest.mark.parametrize("timeout_s", [3601.0, 1e9, float("nan")])
def test_a_wait_longer_than_the_servers_cap_is_refused_naming_timeout_s(timeout_s):
    sessions = Sessions()
    token = sessions.open(session(size=2))
    with device_server(sessions) as stub:
        with pytest.raises(grpc.RpcError) as refused:
            stub.Recv(d.RecvRequest(name="x", src=[0], dst=[1], timeout_s=timeout_s), metadata=as_run(token),
                      timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "give at most 3600 seconds (0: 120), e.g. IPUOF_VIPU_API_TIMEOUT=120" in refused.value.details()


def test_the_default_threads_hold_every_runs_limit_on_the_whole_pod():
    calls = CallsInFlight(default_threads(16))
    assert calls.threads == 4 * 16 + 16
    assert sum(calls.limit(1) for _ in range(16)) <= calls.threads - 16  # the Pod cut into 1-IPU runs
    assert calls.limit(16) == 2 * 16 + 2 <= calls.threads // 2  # one run on all of it
    assert default_threads(65_536) == MAX_DEVICE_THREADS  # (the flag's bound: not a thread per call of 16,384 runs)


def test_the_sdks_instances_meeting_stay_under_their_runs_limit():
    """Four instances on a 4-IPU partition, each waiting in a collective and a step's report until the last comes:
    the most one run of the SDK has in flight (one call per instance), on a server of few threads (a run's limit
    there: half of its 8, as for a 1-IPU run)."""
    with served(session(size=4)):
        def instance(index: int):
            connection = Connection(from_environment("VIPU_DEVICE_ADDRESS"), from_environment("VIPU_RUN_TOKEN"))
            with Device(connection, 1, 4, index, 4, index, 1) as device:
                got = device.allreduce({index: np.full(3, index + 1.0, np.float32)}, [0, 1, 2, 3], name="g")
                return got[index], device.report_step(np.array([index], np.float32))["loss"]

        results = in_threads(*(lambda index=index: instance(index) for index in range(4)))
    assert all(np.array_equal(got, np.full(3, 10.0)) and loss == 1.5 for got, loss in results), results


def test_a_put_past_the_controllers_tensor_memory_is_refused_to_the_program():
    with served(session(size=2), memory=TensorMemory(budget=1 << 20)), ipu.attach() as device:
        device.put("w", {0: np.zeros(1 << 17, np.float32)}, memory="streaming")  # 512 KiB
        with pytest.raises(ipu.ResourceExhausted, match=r"put 'w2': 1,048,576 bytes \(1.0 MiB\) more would pass the"
                           r" controller's host memory for tensors: programs hold 524,288 of its 1,048,576 bytes"):
            device.put("w2", {1: np.zeros(1 << 18, np.float32)}, memory="streaming")
        device.free("w", [0])
        device.put("w2", {1: np.zeros(1 << 18, np.float32)}, memory="streaming")


@pytest.mark.parametrize("threads, ipus, operator", [(8, 16, True), (default_threads(16), 1, False)])
def test_a_limit_the_servers_threads_cut_names_the_operators_fix_too(threads, ipus, operator):
    """A 16-instance program making one call per instance needs 16 in flight: when the server's threads cut its
    limit below that, its own calls are not the only fix, and the refusal names --device-threads."""
    calls = CallsInFlight(threads)
    run = session(size=ipus, job_id=7)
    with ExitStack() as held:
        for _ in range(calls.limit(ipus)):
            held.enter_context(calls.call(run, "Collective"))
        with pytest.raises(ResourceExhausted) as refused, calls.call(run, "Collective"):
            pass
    assert "make one call at a time per instance or IPU group" in refused.value.message
    assert ("ask the operator for a larger vipu-server --device-threads" in refused.value.message) is operator
    assert calls.in_flight(run) == 0
