"""The DeviceService: a user's program reaching its partition's emulated IPUs (protos/vipu/v1/device.proto).

Thin, as every servicer: convert, call the run's session (found by the call's run token through the control
plane), convert back. Waits for other instances end before the call's own deadline does, so the caller reads who
was missing rather than a bare DEADLINE_EXCEEDED. The threads serving it are shared by every program: each run has a
limit on its calls in flight (calls_in_flight.py), and a wait at most MAX_WAIT_S (a longer timeout_s is refused).
"""

from __future__ import annotations

from contextlib import contextmanager

from vipu.errors import InvalidArgument
from vipu.server.calls_in_flight import CallsInFlight
from vipu.server.status import rpc
from vipu.v1 import device_pb2 as d
from vipu.v1 import device_pb2_grpc

TOKEN_METADATA = "x-vipu-run-token"
WAIT_S = 120.0  # a wait for other instances when the call gives none (IPUOF_VIPU_API_TIMEOUT's default)
MAX_WAIT_S = 3600.0  # the longest a call may wait for other instances (timeout_s)
OPS = {d.ALLREDUCE: "allreduce", d.REDUCE_SCATTER: "reduce_scatter", d.ALL_GATHER: "all_gather",
       d.BROADCAST: "broadcast"}


def _arrays(items, what: str) -> dict:
    from vipu.sdk.wire import from_wire  # numpy: with a program's first call, not the controller's start

    return {t.ipu: from_wire(t.array, f"{what} of IPU {t.ipu}") if t.HasField("array") else None for t in items}


def _wire(arrays: dict) -> list[d.IpuArray]:
    from vipu.sdk.wire import to_wire

    return [d.IpuArray(ipu=ipu, array=to_wire(a)) for ipu, a in arrays.items()]


def _wait(requested: float, context) -> float:
    """The wait a call asked for, ended a second before its deadline (if it has one)."""
    if not requested <= MAX_WAIT_S:  # (and NaN)
        raise InvalidArgument(f"timeout_s is {requested:g}; give at most {MAX_WAIT_S:g} seconds (0: {WAIT_S:g}), e.g."
                              f" IPUOF_VIPU_API_TIMEOUT={WAIT_S:g}", field="timeout_s")
    wait = requested if requested > 0 else WAIT_S
    remaining = context.time_remaining()
    return min(wait, max(0.1, remaining - 1.0)) if remaining is not None else wait


class DeviceService(device_pb2_grpc.DeviceServiceServicer):
    def __init__(self, plane, calls: CallsInFlight):
        self.plane, self.calls = plane, calls

    @contextmanager
    def _session(self, context, method: str):
        """The caller's run's session, with the call counted as one of its run's calls in flight while inside."""
        token = next((value for key, value in context.invocation_metadata() or () if key == TOKEN_METADATA), None)
        session = self.plane.devices.session(token)
        with self.calls.call(session, method):
            yield session

    @rpc
    def Attach(self, request, context):
        with self._session(context, "Attach") as session:
            info = session.attach(request.instance_index, request.num_instances or 1, request.ipus_per_replica or 1)
        return d.AttachResponse(**info)

    @rpc
    def PutTensors(self, request, context):
        memory = "streaming" if request.memory == d.STREAMING else "sram"
        with self._session(context, "PutTensors") as session:
            session.put(request.name, _arrays(request.tensors, f"tensor {request.name!r}"), memory)
        return d.PutTensorsResponse()

    @rpc
    def GetTensors(self, request, context):
        with self._session(context, "GetTensors") as session:
            return d.GetTensorsResponse(tensors=_wire(session.get(request.name, list(request.ipus))))

    @rpc
    def FreeTensors(self, request, context):
        with self._session(context, "FreeTensors") as session:
            session.free(request.name, list(request.ipus))
        return d.FreeTensorsResponse()

    @rpc
    def Offload(self, request, context):
        with self._session(context, "Offload") as session:
            return d.ChargedResponse(virtual_s=session.offload(request.name, list(request.ipus)))

    @rpc
    def Load(self, request, context):
        with self._session(context, "Load") as session:
            return d.ChargedResponse(virtual_s=session.load(request.name, list(request.ipus)))

    @rpc
    def Reserve(self, request, context):
        with self._session(context, "Reserve") as session:
            session.reserve(request.name, dict(request.bytes))
        return d.ReserveResponse()

    @rpc
    def RunComputeSet(self, request, context):
        with self._session(context, "RunComputeSet") as session:
            return d.ChargedResponse(virtual_s=session.compute(dict(request.flops), request.dtype or "fp16",
                                                               dict(request.vector_cycles)))

    @rpc
    def Collective(self, request, context):
        op = OPS.get(request.op, "unknown")
        wait = _wait(request.timeout_s, context)
        with self._session(context, "Collective") as session:
            got, seconds = session.collective(
                op, request.name, [list(g.ipus) for g in request.groups],
                _arrays(request.tensors, f"{op} contribution"), request.sequence,
                request.root if op == "broadcast" else None, wait)
        return d.CollectiveResponse(tensors=_wire(got), virtual_s=seconds)

    @rpc
    def Send(self, request, context):
        with self._session(context, "Send") as session:
            tensors = _arrays(request.tensors, f"send {request.name!r}")
            return d.ChargedResponse(virtual_s=session.send(request.name, tensors, list(request.dst), request.sequence))

    @rpc
    def Recv(self, request, context):
        wait = _wait(request.timeout_s, context)
        with self._session(context, "Recv") as session:
            got = session.recv(request.name, list(request.src), list(request.dst), request.sequence, wait)
        return d.RecvResponse(tensors=_wire(got))

    @rpc
    def ReportStep(self, request, context):
        from vipu.sdk.wire import from_wire

        wait = _wait(request.timeout_s, context)
        with self._session(context, "ReportStep") as session:
            report = session.report_step(request.instance_index, request.step, from_wire(request.losses, "losses"),
                                         wait)
        return d.ReportStepResponse(report_json=report.model_dump_json())
