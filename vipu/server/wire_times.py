"""Every google.protobuf Timestamp and Duration in a request checked against the ranges the types define, before the
servicer reads it, so a time out of range is refused naming its field rather than read as some other time.

Why here: protobuf's Python runtime parses any seconds and nanos, and seconds + nanos / 1e9 of an invalid pair
(nanos 2,000,000,000; -5 nanos with 60 seconds) is a valid-looking number, so the domain could never tell. The
ranges are the types' own (google/protobuf/duration.proto and timestamp.proto): a Duration's seconds within
+-315,576,000,000 (10,000 years), its nanos within +-999,999,999 and of the same sign as its seconds; a
Timestamp's seconds from 0001-01-01 to 9999-12-31T23:59:59Z, its nanos 0 to 999,999,999.
"""

from __future__ import annotations

import functools

from google.protobuf.message import Message

from vipu.errors import InvalidArgument

DURATION = "google.protobuf.Duration"
TIMESTAMP = "google.protobuf.Timestamp"
MAX_DURATION_S = 315_576_000_000
MIN_TIMESTAMP_S = -62_135_596_800  # 0001-01-01T00:00:00Z
MAX_TIMESTAMP_S = 253_402_300_799  # 9999-12-31T23:59:59Z
MAX_NANOS = 999_999_999


def check_times(request: object) -> None:
    """Refuse (InvalidArgument naming the field's path, e.g. jobs[2].job_spec.time_limit) the first Timestamp or
    Duration of `request` out of its type's range."""
    if isinstance(request, Message):
        _check(request, "")


@functools.cache
def _timed_fields(descriptor) -> frozenset:
    """The fields of a message type that are, or may hold, a Timestamp or Duration (read once per type)."""
    out = []
    for field in descriptor.fields:
        kind = field.message_type
        if kind is None:
            continue
        if kind.full_name in (DURATION, TIMESTAMP) or (not kind.full_name.startswith("google.protobuf.")
                                                       and _may_hold_times(kind)):
            out.append(field)
    return frozenset(out)


def _may_hold_times(descriptor, seen: frozenset = frozenset()) -> bool:
    if descriptor.full_name in seen:
        return False
    if descriptor.GetOptions().map_entry:
        value = descriptor.fields_by_name["value"].message_type
        return value is not None and (value.full_name in (DURATION, TIMESTAMP) or _may_hold_times(value, seen))
    seen = seen | {descriptor.full_name}
    return any(f.message_type is not None and (f.message_type.full_name in (DURATION, TIMESTAMP)
                                               or _may_hold_times(f.message_type, seen))
               for f in descriptor.fields)


def _check(message: Message, path: str) -> None:
    timed = _timed_fields(message.DESCRIPTOR)
    if not timed:
        return
    for field, value in message.ListFields():  # the fields set only: a SubmitJobs of 10,000 text specs in ~10 ms
        if field not in timed:
            continue
        name = path + field.name
        if field.message_type.GetOptions().map_entry:
            inner = field.message_type.fields_by_name["value"]
            for key, item in value.items():
                _one(inner.message_type.full_name, item, f"{name}[{key!r}]")
        elif field.is_repeated:
            for k, item in enumerate(value):
                _one(field.message_type.full_name, item, f"{name}[{k}]")
        else:
            _one(field.message_type.full_name, value, name)


def _one(kind: str, value: Message, path: str) -> None:
    if kind == DURATION:
        _duration(value, path)
    elif kind == TIMESTAMP:
        _timestamp(value, path)
    else:
        _check(value, path + ".")


def _duration(value, path: str) -> None:
    seconds, nanos = value.seconds, value.nanos
    if not -MAX_NANOS <= nanos <= MAX_NANOS:
        raise InvalidArgument(f"{path} has nanos {nanos:,}; a Duration's nanos are -999,999,999 to 999,999,999:"
                              " carry whole seconds in seconds", field=path)
    if (seconds > 0 > nanos) or (seconds < 0 < nanos):
        raise InvalidArgument(f"{path} has seconds {seconds:,} and nanos {nanos:,} of opposite signs; give both of"
                              " the same sign (-1.5 s is seconds -1, nanos -500,000,000)", field=path)
    if not -MAX_DURATION_S <= seconds <= MAX_DURATION_S:
        raise InvalidArgument(f"{path} has seconds {seconds:,}; a Duration is at most 10,000 years"
                              f" ({MAX_DURATION_S:,} s) either way", field=path)


def _timestamp(value, path: str) -> None:
    seconds, nanos = value.seconds, value.nanos
    if not 0 <= nanos <= MAX_NANOS:
        raise InvalidArgument(f"{path} has nanos {nanos:,}; a Timestamp's nanos are 0 to 999,999,999 (a time before"
                              " a whole second: seconds - 1 and nanos 1e9 - n)", field=path)
    if not MIN_TIMESTAMP_S <= seconds <= MAX_TIMESTAMP_S:
        raise InvalidArgument(f"{path} has seconds {seconds:,}; a Timestamp is from 0001-01-01 to 9999-12-31"
                              f" ({MIN_TIMESTAMP_S:,} to {MAX_TIMESTAMP_S:,} s since the epoch)", field=path)
