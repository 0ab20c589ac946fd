"""What a job runs, as the scheduler sees it: an opaque workload with a `kind`, and the registry of kinds' spec models.

Why opaque: the scheduler places jobs by IPUs and time limit, and needs of the workload only when it ends by itself,
if that is known in advance (`ending`). Training, users' programs and whatever comes next live in vipu/jobs and
register their spec model here (as kube-scheduler's plugins register in one registry), so this package imports
none of them. `sleep` and `hold` are the scheduler's own: a trace replay runs nothing else.
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, SerializeAsAny
from pydantic_core import PydanticCustomError

from vipu.scheduler.durations import parse_duration
from vipu.spec_numbers import Whole


class Ending(NamedTuple):
    """When a workload ends by itself, and its exit code."""

    at: float
    exit_code: int


class RunExit(NamedTuple):
    """How a run's program ended, as recorded where it ran (its supervisor's exit file): when, by the wall clock of
    its node, its exit code and the signal that ended it (0: it exited)."""

    at: float
    exit_code: int
    signal: int


class Workload(BaseModel):
    """The base of every workload kind's spec model."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str

    def ending(self, started: float) -> Ending | None:
        """When a run started at `started` ends by itself, if that is known now; None if only the workload can tell
        (a training run, a program) or it never does (hold)."""
        return None

    def fewer_ipus(self, limit: int) -> str | None:
        """How to ask for at most `limit` IPUs in the workload's own terms (a train layout's degrees), or None: a
        refusal of too many IPUs names what else must change with ipus."""
        return None

    @property
    def modelled(self) -> bool:
        """It runs without computing anything, only holding its partition for a predicted time (a train workload
        with execute: false): the listings label it so."""
        return False


class SleepWorkload(Workload):
    """Occupies its partition for `duration`, then exits with `exit_code`; longer than time_limit -> TIMEOUT."""

    kind: Literal["sleep"] = "sleep"
    duration: Annotated[float, BeforeValidator(parse_duration)]
    exit_code: Whole = Field(0, ge=0, le=255)

    def ending(self, started: float) -> Ending:
        return Ending(started + self.duration, self.exit_code)


class HoldWorkload(Workload):
    """Holds the partition until the job is cancelled or reaches its time limit (an salloc-style allocation)."""

    kind: Literal["hold"] = "hold"


KINDS: dict[str, type[Workload]] = {"sleep": SleepWorkload, "hold": HoldWorkload}


def register(model: type[Workload]) -> None:
    """Make a workload kind known to job specs (its model's `kind` default names it)."""
    name = model.model_fields["kind"].default
    if not isinstance(name, str) or not name:
        raise TypeError(f"{model.__name__}.kind needs a default naming the kind")
    if KINDS.get(name, model) is not model:
        raise ValueError(f"workload kind {name!r} is registered twice ({KINDS[name].__name__}, {model.__name__})")
    KINDS[name] = model


def parse_workload(value: object) -> Workload:
    """A workload from a spec's `workload` mapping, by its `kind`."""
    if isinstance(value, Workload):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("workload", "expected a mapping with a kind, e.g. {kind: sleep, duration: 30s}")
    kind = value.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        known = ", ".join(KINDS)
        if kind is None:
            raise PydanticCustomError("workload_kind", "has no kind; add one of {known}", {"known": known})
        # the shape of pydantic's own error for a tagged union, which vipu.validation.describe words for the user
        tags = ", ".join(f"'{k}'" for k in KINDS)
        raise PydanticCustomError("union_tag_invalid", "unknown kind {tag}",
                                  {"tag": str(kind), "expected_tags": tags, "discriminator": "'kind'"})
    return model.model_validate(value)


# A JobSpec's `workload` field: validated by its kind's model, stored with all of that model's fields.
AnyWorkload = Annotated[SerializeAsAny[Workload], PlainValidator(parse_workload)]
