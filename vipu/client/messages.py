"""The API's typed messages and the plain data they stand for: a job spec, a job's detail and its run's summary as
the mappings a spec file and the controller's records hold, and times as seconds.

Why here, and on descriptors alone: the controller writes these messages from its records and reads a typed spec into
the mapping its spec model validates, and the CLI and scripts read them back into the same mappings; one module both
ends use keeps the two shapes from drifting, and it needs neither pydantic nor the models (the CLI's read paths load
neither). Field names are the mappings' keys; the few places where they differ are JobSpec's and are named below:
a `kind` oneof is the mapping's `kind` and the chosen member's fields; a message that wraps one map is that map.
"""

from __future__ import annotations

import functools
import math

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

NOW = "now"
KIND = "kind"  # the oneof naming a workload's or a model's kind, and the mapping key that holds it
OTHER = "other"  # the kind oneof's member for kinds the proto has no message for: the mapping as a Struct


# repeated fields whose model default is null, not []: empty on the wire means unset
EMPTY_IS_UNSET = frozenset({"layers_per_stage"})

def seconds(message: Timestamp | Duration) -> float:
    """A Timestamp as seconds since the epoch, a Duration as seconds: the double the deprecated fields hold."""
    return message.seconds + message.nanos / 1e9


def timestamp(value: float) -> Timestamp:
    """Seconds since the epoch as a Timestamp; seconds(timestamp(x)) == x for every time a controller gives."""
    whole = math.floor(value)
    nanos = round((value - whole) * 1e9)
    whole, nanos = (whole + 1, 0) if nanos >= 1_000_000_000 else (whole, nanos)
    return Timestamp(seconds=whole, nanos=nanos)


def duration(value: float) -> Duration:
    """Seconds (negative too) as a Duration, its seconds and nanos of one sign as the type requires."""
    whole = math.trunc(value)
    nanos = round((value - whole) * 1e9)
    if abs(nanos) >= 1_000_000_000:
        whole, nanos = whole + (1 if nanos > 0 else -1), 0
    return Duration(seconds=whole, nanos=nanos)


def optional_seconds(message: Message, name: str) -> float | None:
    """The seconds of a message's Timestamp or Duration field, None when it is not set."""
    return seconds(getattr(message, name)) if message.HasField(name) else None


# -- message -> mapping ----------------------------------------------------------------------------------------


def to_data(message: Message, nulls: bool = False) -> dict:
    """The mapping a message stands for: its fields under their names, times as seconds. A field with presence is
    left out when unset (so a spec's default applies), or with `nulls` given as None (a record's null), unless it
    is one of a oneof's members; a plain field is always there, as 0 or "" when it is."""
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Struct":
        from google.protobuf.json_format import MessageToDict  # here: the CLI's tables need none of it

        return _whole(MessageToDict(message))
    data = {}
    typed_of = _typed_pairs(message.DESCRIPTOR)
    doubles = {d: x for x, d in typed_of.items()}
    for field in message.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if field.name in typed_of:
            continue  # read under the deprecated double's key, below: the mapping keeps its keys
        typed = doubles.get(field.name)
        if typed is not None and message.HasField(typed):
            data[field.name] = seconds(getattr(message, typed))  # the typed field, where the controller filled it
            continue
        if field.has_presence and not message.HasField(field.name):
            if nulls and (oneof is None or oneof.name == "_" + field.name):  # proto3 optional: a oneof of its own
                data[field.name] = None
            continue
        value = getattr(message, field.name)
        if field.name in EMPTY_IS_UNSET and not len(value):
            value = None  # proto3 has no unset list; the model's default is null
            if nulls:
                data[field.name] = None
            continue
        if oneof is not None and oneof.name == KIND:
            inner = to_data(value, nulls)
            data.update(inner if field.name == OTHER else {KIND: field.name, **inner})
        else:
            data[field.name] = _value(field, value, nulls)
    if name == "vipu.v1.JobSpec":
        _spec_from_message(data, nulls)
    return data


def _whole(value):
    """A Struct's value with its whole numbers as ints: a Struct keeps every number as a double, so a kind sent in
    one (`other`) would read `ipus: 4` as 4.0, which an integer field refuses (spec_numbers.py); a float field takes
    the int. Past 2**53 a double is no longer the number written, so it stays one."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


@functools.cache
def _typed_pairs(descriptor) -> dict[str, str]:
    """A message's Durations that replace a deprecated double of seconds beside them (RunSummary's emulated_step
    beside emulated_step_s): typed name -> double's name. A mapping keeps the double's key; a message gets both."""
    fields = descriptor.fields_by_name
    return {f.name: f.name + "_s" for f in descriptor.fields
            if f.message_type is not None and f.message_type.full_name == "google.protobuf.Duration"
            and f.name + "_s" in fields and fields[f.name + "_s"].cpp_type == FieldDescriptor.CPPTYPE_DOUBLE}


def _value(field: FieldDescriptor, value, nulls: bool):
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        return {k: _single(value_field, v, nulls) for k, v in value.items()}
    if field.is_repeated:
        return [_single(field, v, nulls) for v in value]
    return _single(field, value, nulls)


def _single(field: FieldDescriptor, value, nulls: bool):
    if field.message_type is None:
        return value
    kind = field.message_type.full_name
    if kind in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        return seconds(value)
    wrapped = _wrapped_map(field.message_type)
    if wrapped is not None:
        return _value(wrapped, getattr(value, wrapped.name), nulls)
    return to_data(value, nulls)


def _wrapped_map(descriptor) -> FieldDescriptor | None:
    """The one field of a message that wraps a single map (Environment), else None."""
    fields = descriptor.fields
    if len(fields) == 1 and fields[0].message_type is not None and fields[0].message_type.GetOptions().map_entry:
        return fields[0]
    return None


def _spec_from_message(data: dict, nulls: bool) -> None:
    """JobSpec's fields that are not its mapping's: UNLIMITED and the three forms of begin."""
    if data.pop("time_limit_unlimited", False):
        data["time_limit"] = math.inf
    at, after, text = (data.pop(key, None) for key in ("begin_time", "begin_after", "begin_text"))
    if after is not None:  # the spec's own form (begin.py): now+90, now-10 (a time past: eligible at once)
        at = f"{NOW}{'-' if after < 0 else '+'}{_number(abs(after))}"
    begin = next((x for x in (at, text) if x is not None), None)
    if begin is not None or nulls:
        data["begin"] = begin


# -- mapping -> message ----------------------------------------------------------------------------------------


class FieldValueError(ValueError):
    """A mapping's value that its message field cannot take, named by message and field."""


def to_message(data: dict, message: Message) -> Message:
    """Fill `message` from the mapping it stands for (None values left unset) and return it. A key the message has
    no field for raises KeyError naming it: a record or spec field the proto does not cover yet. A value of the
    wrong type (a time as text: typed times are seconds) raises ValueError naming the field and the fix."""
    if message.DESCRIPTOR.full_name == "google.protobuf.Struct":
        from google.protobuf.json_format import ParseDict

        return ParseDict(data, message)
    if message.DESCRIPTOR.full_name == "vipu.v1.JobSpec":
        data = _spec_to_message(data)
    fields = message.DESCRIPTOR.fields_by_name
    for typed, double in _typed_pairs(message.DESCRIPTOR).items():  # a mapping has the double's key: fill both
        if data.get(double) is not None and typed not in data and math.isfinite(data[double]):
            data = {**data, typed: data[double]}
    kind = message.DESCRIPTOR.oneofs_by_name.get(KIND)
    if kind is not None:
        member = fields.get(data.get(KIND))
        if member is None or member.containing_oneof is not kind or member.name == OTHER:
            to_message(data, getattr(message, OTHER))
        else:
            chosen = getattr(message, member.name)
            to_message({k: v for k, v in data.items() if k != KIND}, chosen)
            chosen.SetInParent()  # an empty kind (hold) is still the one chosen
        return message
    for key, value in data.items():
        if value is None:
            continue
        field = fields.get(key)
        if field is None:
            raise KeyError(f"{message.DESCRIPTOR.full_name} has no field {key!r}")
        try:
            _set(message, field, value)
        except FieldValueError:
            raise  # a nested field's, named already
        except (TypeError, ValueError):
            kind = field.message_type.full_name if field.message_type is not None else field.type
            hint = " (typed times are seconds: 600, not '10m'; or send the spec as text)" if kind in (
                "google.protobuf.Duration", "google.protobuf.Timestamp") else ""
            raise FieldValueError(f"{message.DESCRIPTOR.name}.{key}: {value!r} is not a value for this field{hint}") \
                from None
    return message


def _set(message: Message, field: FieldDescriptor, value) -> None:
    target = getattr(message, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        for k, v in value.items():
            if value_field.message_type is None:
                target[k] = v
            else:
                _fill(target[k], value_field, v)
    elif field.is_repeated:
        for v in value:
            if field.message_type is None:
                target.append(v)
            else:
                _fill(target.add(), field, v)
    elif field.message_type is None:
        setattr(message, field.name, value)
    else:
        _fill(target, field, value)


def _fill(target: Message, field: FieldDescriptor, value) -> None:
    kind = field.message_type.full_name
    if kind == "google.protobuf.Timestamp":
        target.CopyFrom(timestamp(value))
    elif kind == "google.protobuf.Duration":
        target.CopyFrom(duration(value))
    elif _wrapped_map(field.message_type) is not None:
        _set(target, _wrapped_map(field.message_type), value)
    else:
        to_message(value, target)
        target.SetInParent()  # an empty message (a hold workload) is still set


def _spec_to_message(data: dict) -> dict:
    data = dict(data)
    if data.get("time_limit") == math.inf:
        data["time_limit"], data["time_limit_unlimited"] = None, True
    begin = data.pop("begin", None)
    if isinstance(begin, str) and _is_number(begin[len(NOW) + 1:]) and begin.startswith((f"{NOW}+", f"{NOW}-")):
        after = float(begin[len(NOW) + 1:])  # the spec's own form of a delay: now+SECONDS (now-SECONDS: past)
        data["begin_after"] = -after if begin[len(NOW)] == "-" else after
    elif isinstance(begin, str):
        data["begin_text"] = begin
    elif begin is not None:
        data["begin_time"] = begin
    return data



def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
