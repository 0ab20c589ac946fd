"""What a user submits: the job spec, from a dict (gRPC), a YAML/JSON file or a string.

Why the spec checks only its own shape here and the Pod-dependent rules (IPUs that fit the Pod, known QOS,
existing dependency targets) at submit: a spec file is portable between Pods, and only the scheduler knows the Pod,
its QOS table and its jobs. Every failure is an InvalidArgument that names the field and the fix, raised before
anything is stored.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from vipu.documents import read_document
from vipu.errors import InvalidArgument
from vipu.partition.node_names import expand
from vipu.scheduler.arrays import ArraySpec, ArraySyntaxError, parse_array
from vipu.scheduler.begin import parse_begin
from vipu.scheduler.deps import Dependency, DependencySyntaxError, parse_dependency
from vipu.scheduler.durations import parse_duration
from vipu.scheduler.workload import AnyWorkload, HoldWorkload
from vipu.validation import MAX_SPEC_BYTES, describe, violations
from vipu.spec_numbers import Whole

LimitSeconds = Annotated[
    float, BeforeValidator(lambda v: parse_duration(v, "time_limit", positive=True, unlimited=True))
]
MAX_COMMENT = 1024  # slurmctld refuses a longer comment ("strlen(comment) too big (1025 > 1024)")
MAX_SUBMIT_LINE = 1024 * 1024  # slurmctld's default max_submit_line_size
BeginTime = Annotated[float | str | None, BeforeValidator(parse_begin)]  # a time, or "now+SECONDS" (begin.py)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JobSpec(Strict):
    name: str = Field("job", description="job name (printable characters, spaces too, at most 1024)")
    ipus: Whole = Field(description="a power of two that fits the Pod (checked at submit)")
    time_limit: LimitSeconds | None = Field(
        None, description="> 0: a number of seconds, or text with a unit (90s, 10m, 1h30m) or Slurm's colons"
        " (1-00:00:00); text without a unit is refused, since Slurm reads -t 90 as minutes; UNLIMITED: the longest"
        " the job's qos allows; default: config")
    qos: str | None = Field(None, description="default: the config's default_qos (normal)")
    nice: Whole = Field(0, ge=-10_000, le=10_000, description="lowers the priority by this much")
    user: str = Field("nobody", description="owner; default: the submitting user")
    account: str | None = Field(None, description="accounting group")
    dependency: str | None = Field(
        None, description="afterok:ID[:ID],afterany:ID,afternotok:ID,singleton; `?` for OR; an ID is a job (an array"
        " job: all its tasks) or N_T, task T of array job N; after:ID[+MINUTES]: once ID started (or was cancelled),"
        " MINUTES later; aftercorr:ID: each task of this array once the task of the same index of array ID completed"
        " (without one: once ID as a whole did, as afterok)")
    array: str | None = Field(None, description="array tasks, e.g. 0-99%10, 1,3,5, 0-15:4")
    hold: bool = Field(False, strict=True, description="submit held (JobHeldUser) until `vipu release`")
    begin: BeginTime = Field(
        None,
        description="sbatch --begin: PENDING with reason BeginTime until then. ISO-8601 (2026-11-22T14:00:00; Z or"
        " +01:00 for a zone, else the controller's local time), now+DURATION (now+10m, now+1hour, now+90 = seconds;"
        " kept as now+SECONDS and fixed at submit) or Unix seconds. Past: eligible at once; at most 366 days ahead;"
        " a bare 10m is refused as ambiguous (write now+10m)",
    )
    requeue: bool = Field(True, strict=True, description="requeue under the same id after a node failure; false"
                          " also refuses `vipu requeue` (sbatch --no-requeue)")
    output: str | None = Field(
        None, max_length=4096,
        description="sbatch --output: a command workload's stdout (and stderr, without `error`) as it runs; for"
        " other kinds, the file the controller writes when a run ends (how it ended, and a train workload's log)."
        " An absolute path (`vipu submit` makes a relative one absolute from where it runs) with"
        " Slurm's patterns %j job id, %A array job id, %a array task (4294967294 outside an array), %J job id and"
        " step (the job id alone for the batch script, as Slurm 22.05), %s step (batch), %n node and %t task in the"
        " job (0), %N its first IPU-Machine's name"
        " (a command's; kept as written for other kinds), %x job name, %u user, %% a percent sign (a"
        " width zero-pads a number, as sbatch's: %4j is 0032). Its"
        " directory must exist: as sbatch's, a run fails (FAILED) rather than make it. A file opened as the"
        " controller's own user (every kind's but a command's under --secure, which its user's account opens) goes"
        " only under submit_dir (or an operator's --output-dir; a command's working directory too) and never over a"
        " file the controller did not write for this job or an earlier job of its user (sbatch would truncate it):"
        " the run fails instead. A folder the submit knows (no % in it) that is missing or not allowed is refused"
        " at the submit, where the controller opens the file as its own user; what changes until the start is"
        " checked again then, and by a held job's release, refused while the run could only fail (the job stays"
        " held)",
    )
    error: str | None = Field(
        None, max_length=4096,
        description="sbatch --error: where a command workload's stderr goes (default: with its output), with the"
        " same patterns and rules as output; other kinds write none")
    submit_dir: str | None = Field(
        None, max_length=4096,
        description="where `vipu submit` ran (absolute; the CLI fills it in): files opened as the controller's user"
        " (output, a command's error) go only under it, its state folder's job-output folder or an operator's"
        " --output-dir (a command's working directory too)")
    allocation: str | None = Field(None, description="V-IPU allocation to run in (default: default)")
    nodelist: str | None = Field(
        None, max_length=4096,
        description="sbatch -w/--nodelist: IPU-Machines (Slurm's nodes, as `vipu info -N` names them) the job must"
        " hold, a Slurm host list such as ag[00-01] or ag02,ag03. As in Slurm it gets every one of them, and more"
        " machines when it needs more IPUs: those of the aligned block of its size around them (a job's IPUs are one"
        " aligned block), so -w ag01 with 16 IPUs runs on ag[00-03], and machines no one block of its size holds"
        " are refused at submit, as are names the Pod does not have and machines outside its allocation. Until they"
        " are free it waits (Resources; ReqNodeNotAvail while one is drained or failed)")
    exclude: str | None = Field(
        None, max_length=4096,
        description="sbatch -x/--exclude: IPU-Machines the job must not run on, a Slurm host list as nodelist's;"
        " none of them may be in its nodelist")
    comment: str | None = Field(
        None, max_length=MAX_COMMENT,
        description="sbatch --comment: any text, at most 1024 characters (slurmctld's limit); kept with the job and"
        " shown by squeue's %k, sacct's Comment and `vipu show job`'s Comment=")
    submit_line: str | None = Field(
        None, max_length=MAX_SUBMIT_LINE,
        description="the command line that submitted the job, as Slurm 23.02's SubmitLine (`vipu submit` fills it"
        " in: its words joined by spaces, unquoted, as sbatch joins its argv); shown by sacct's SubmitLine")
    workload: AnyWorkload = Field(HoldWorkload(), description="what the job runs: a mapping with its `kind` (sleep,"
                                  " hold, train, command: below)")

    @field_validator("time_limit")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise PydanticCustomError("time_limit", "is 0 seconds; give a positive duration such as 10m or 1h")
        return value

    @field_validator("dependency")
    @classmethod
    def _dependency(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_dependency(value)
            except DependencySyntaxError as e:
                raise PydanticCustomError("dependency", str(e)) from None
        return value

    @field_validator("array")
    @classmethod
    def _array(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_array(value)
            except ArraySyntaxError as e:
                raise PydanticCustomError("array", str(e)) from None
        return value

    @field_validator("nodelist", "exclude")
    @classmethod
    def _hosts(cls, value: str | None, info) -> str | None:
        if value is not None:
            try:
                expand(value)
            except ValueError as e:
                raise PydanticCustomError(info.field_name, str(e)) from None
        return value

    @field_validator("output", "error")
    @classmethod
    def _output(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise PydanticCustomError("output", "contains a NUL byte; give a plain file path")
        return value

    @field_validator("comment", "submit_line")
    @classmethod
    def _text(cls, value: str | None, info) -> str | None:
        if value is not None and "\x00" in value:
            raise PydanticCustomError(info.field_name, "contains a NUL byte; give plain text")
        return value

    @field_validator("submit_dir")
    @classmethod
    def _submit_dir(cls, value: str | None) -> str | None:
        if value is not None and ("\x00" in value or not value.startswith("/")):
            raise PydanticCustomError("submit_dir", "must be an absolute path (where vipu submit ran), e.g. /home/me")
        return value

    def parsed_dependency(self) -> Dependency | None:
        return parse_dependency(self.dependency) if self.dependency else None

    def parsed_array(self, max_tasks: int) -> ArraySpec | None:
        return parse_array(self.array, max_tasks) if self.array else None


def parse_spec(data: object, source: str = "job spec") -> JobSpec:
    """A spec from already-parsed data (a dict from gRPC or YAML)."""
    if isinstance(data, JobSpec):
        return data
    if not isinstance(data, dict):
        raise InvalidArgument(
            f"invalid {source}: expected a mapping of fields such as {{ipus: 4, time_limit: 10m}}, got"
            f" {type(data).__name__}"
        )
    try:
        return JobSpec.model_validate(data)
    except ValidationError as e:
        raise InvalidArgument(describe(e, source, PLAN_ONLY, data),
                              violations=tuple(violations(e, PLAN_ONLY, data))) from None


# keys `vipu plan` reads from the same file that a submitted job does not take
PLAN_ONLY = {"pod": "for `vipu plan` only (a job runs on its controller's Pod); remove it to submit the spec"}


def load_spec(text_or_bytes: str | bytes, source: str = "job spec") -> JobSpec:
    """A spec from the text of a YAML or JSON file; refuses oversized, binary or non-mapping input."""
    size = len(text_or_bytes.encode() if isinstance(text_or_bytes, str) else text_or_bytes)
    if size > MAX_SPEC_BYTES:
        raise InvalidArgument(
            f"invalid {source}: it is {size} bytes; a job spec may be at most {MAX_SPEC_BYTES} bytes (1 MB) — put"
            " large data in files and reference them"
        )
    if isinstance(text_or_bytes, bytes):
        try:
            text = text_or_bytes.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidArgument(
                f"invalid {source}: not UTF-8 text (bad byte at offset {e.start}); give a YAML or JSON file"
            ) from None
    else:
        text = text_or_bytes
    if "\x00" in text:
        raise InvalidArgument(f"invalid {source}: contains NUL bytes, so it is binary, not YAML or JSON; give a text file")
    data = read_document(text, source)
    if data is None:
        raise InvalidArgument(f"invalid {source}: it is empty; give at least ipus, e.g. {{ipus: 4, time_limit:"
                              " 10m}")
    return parse_spec(data, source)
