"""The details of every refusal, made in one place from the domain's error (google.rpc.Status, sent through
grpcio-status): ErrorInfo with the error's stable reason, BadRequest naming each field at fault and its fix,
ResourceInfo for the object it is about, PreconditionFailure for a state that forbids it. docs/api.md lists the
reasons; a client reads them with grpc_status.rpc_status.from_call (vipu.client does).

Why the field may come from the message: a refusal's message starts with the field it is about ("size is 12, not a
power of two...", "port (--port) is 0...", "ipu 999 does not exist..."), the rule every message follows. The
leading word counts only when the request (or, for a submit, the job spec) has a field of that name, so a message
that starts otherwise names no field rather than a wrong one.
"""

from __future__ import annotations

import re

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from vipu.errors import ORIGIN, VipuError, elided
from vipu.scheduler.job_spec import JobSpec

DOMAIN = "vipu.graphcore.sim"  # ErrorInfo.domain: whose reasons these are
MAX_DESCRIPTION = 1000  # characters of one detail's text: a refusal travels in the call's trailing metadata
MAX_DETAILS_BYTES = 4096  # above this only ErrorInfo is sent: a client's metadata limit is 8 KB by default
# where a job spec's fields sit in a request that carries specs
SPEC_FIELDS = {"SubmitJobRequest": "spec.", "SubmitJobsRequest": "jobs.spec."}
JOB_SPEC_FIELDS = frozenset(JobSpec.model_fields)
# a message's leading field: `invalid SOURCE: ` (a spec's refusals) may come first, and `name` after a kind
# ("partition name 'x' ...", "allocation name ...")
LEADING = re.compile(r"(?:invalid [^:;]*: )?([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*)( name\b)?")


def details(error: VipuError, request: object = None) -> status_pb2.Status:
    """The google.rpc.Status of a refusal: the code and message the call ends with, and the details."""
    code = grpc.StatusCode[error.code]
    message = elided(error.message)
    described = _short(message)
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN)
    if error.resource is not None:
        info.metadata.update({"resource_type": error.resource[0], "resource_name": elided(error.resource[1])})
    info.metadata.update(error.metadata)
    status = status_pb2.Status(code=code.value[0], message=message, details=[_packed(info)])
    target, prefix = _spec_request(error, request)
    violations = [(prefix + path, text) for field, text, inferred in _violations(error, target)
                  if (path := field_path(field, target, inferred))]
    if not violations and code is grpc.StatusCode.INVALID_ARGUMENT and _is_submit(target):
        violations = [(prefix + "spec", described)]  # the spec as a whole: not YAML (its line and column), too large
    more = []
    if violations:
        more.append(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=path, description=text) for path, text in violations]))
    if error.resource is not None:
        kind, name = error.resource[0], elided(error.resource[1])
        more.append(error_details_pb2.ResourceInfo(resource_type=kind, resource_name=name, description=described))
    if code is grpc.StatusCode.FAILED_PRECONDITION:
        subject = f"{error.resource[0]}/{elided(error.resource[1])}" if error.resource else ""
        more.append(error_details_pb2.PreconditionFailure(violations=[
            error_details_pb2.PreconditionFailure.Violation(type=error.reason, subject=subject,
                                                            description=described)]))
    full = status_pb2.Status()
    full.CopyFrom(status)
    full.details.extend(_packed(x) for x in more)
    return full if full.ByteSize() <= MAX_DETAILS_BYTES else status


def status(error: VipuError, request: object = None) -> grpc.Status:
    """What the call ends with: the code, the message, the details, and the mark that the controller chose it."""
    made = rpc_status.to_status(details(error, request))
    return made._replace(trailing_metadata=(ORIGIN, *made.trailing_metadata))


def field_path(field: str, request: object, inferred: bool = False) -> str | None:
    """`field` as a path in `request`: a field of the request as it is, a singular name of a repeated one (ipu ->
    ipus), else a path in the job spec a submit carries (spec.workload.steps). `inferred` (read off a message): a
    spec path only when the spec has that field, and nothing when no field matches."""
    if not isinstance(request, Message):
        return None if inferred else field
    names = request.DESCRIPTOR.fields_by_name
    first, dot, rest = field.partition(".")
    if first.partition("[")[0] in names:  # jobs[2].job_spec.time_limit too
        return field
    if first + "s" in names and names[first + "s"].is_repeated:
        return f"{first}s{dot}{rest}"
    prefix = SPEC_FIELDS.get(request.DESCRIPTOR.name)
    if prefix and (not inferred or first in JOB_SPEC_FIELDS):
        return prefix + field
    return None if inferred else field


def _is_submit(request: object) -> bool:
    """A request carrying one job spec: its bad input that names no field of the spec is about the spec as a whole
    (its text is not YAML or JSON, is too large or empty), whose field is `spec`."""
    return isinstance(request, Message) and request.DESCRIPTOR.name == "SubmitJobRequest"


def _spec_request(error: VipuError, request: object) -> tuple[object, str]:
    """The request a refusal's fields are in, and its path: for one spec of several (SubmitJobs), that spec's
    SubmitJobRequest and `jobs[2].`, so a client knows which spec to fix."""
    index = error.spec_index
    jobs = getattr(request, "jobs", None) if isinstance(request, Message) else None
    if index is None or jobs is None or not 0 <= index < len(jobs) or not isinstance(jobs[index], Message):
        return request, ""
    return jobs[index], f"jobs[{index}]."


def _violations(error: VipuError, request: object) -> list[tuple[str, str, bool]]:
    """(field, fix, inferred) for each field at fault: the error's own, else for bad input the field its message
    starts with (inferred: read off the text, so kept only when the request has that field)."""
    named = [(field, _short(elided(text)), False) for field, text in error.violations if field]
    if named or error.code != "INVALID_ARGUMENT":
        return named
    texts = [text for field, text in error.violations if not field] or [error.message]
    return [found for text in texts if (found := _leading(text, request)) is not None]


def _leading(text: str, request: object) -> tuple[str, str, bool] | None:
    match = LEADING.match(text)
    if match is None:
        return None
    word, named = match.groups()
    names = request.DESCRIPTOR.fields_by_name if isinstance(request, Message) else {}
    field = "name" if named and word not in names and "name" in names else word
    return field, _short(elided(text)), True


def _short(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 3] + "..."


def _packed(detail) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed
