"""Tables shaped like V-IPU's (` Partition | Cluster | ...`) and stable JSON for scripts."""

from __future__ import annotations

import base64
import functools
import math
import sys

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.internal import type_checkers


def table(headers: list[str], rows: list[list[object]], header: bool = True) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return " " + " | ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    lines = ([line(headers)] if header else []) + [line(r) for r in cells]
    return "\n".join(lines)


def as_dict(message) -> dict:
    """protobuf's JSON mapping of a message (field names as in the proto), with every field, so each row of a
    listing has the same keys: an optional field that is not set (a start time before the job started, an array task
    id of a job that is no array's) is null rather than left out, and so is an unset Timestamp or Duration; and
    64-bit integers as numbers. protobuf writes
    those as strings (for JavaScript's doubles); ours are ids, sizes and byte counts, far below 2**53, and a script
    compares `.id == 12` as it would with squeue --json's job_id.

    Why not json_format.MessageToDict: it interprets each field's descriptor for every message, which was most of
    `vipu queue --json` over 10,000 jobs; this reads each type's descriptor once (tests/cli/test_output.py checks
    the two agree on every message of the API)."""
    return _reader(message.DESCRIPTOR)(message)


@functools.cache
def _reader(descriptor):
    """A function from a message of this type to its dict, built once per type. Keys are in name order, so a listing
    can be written without sorting them again (print_rows)."""
    fields = sorted(descriptor.fields, key=lambda f: f.name)
    entries = [(f.name, _value_reader(f), not f.has_presence or f.is_repeated, _is_proto3_optional(f) or _is_time(f))
               for f in fields]

    def read_message(message) -> dict:
        data = {}
        for name, read, always, optional in entries:
            if always or message.HasField(name):
                data[name] = read(getattr(message, name))
            elif optional:
                data[name] = None
        return data

    return read_message


def _is_time(field) -> bool:
    """A Timestamp or Duration: unset (a job not started yet) it is null, as the optional double beside it is, so
    every row of a listing has the same keys."""
    return field.message_type is not None and field.message_type.full_name in TIMES and field.containing_oneof is None


TIMES = ("google.protobuf.Timestamp", "google.protobuf.Duration")


def _is_proto3_optional(field) -> bool:
    """proto3 `optional`: a field in a synthetic oneof of its own, named after it (left out when unset by protobuf,
    null here); a message field or a real oneof's member is left out, as protobuf does."""
    return field.containing_oneof is not None and field.containing_oneof.name == "_" + field.name


def _value_reader(field):
    """A function from a field's Python value (a list or map for repeated fields) to its JSON value."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        read_value = _value_reader(field.message_type.fields_by_name["value"])
        key = field.message_type.fields_by_name["key"]
        read_key = (lambda k: "true" if k else "false") if key.cpp_type == FieldDescriptor.CPPTYPE_BOOL else str
        return lambda mapping: dict(sorted((read_key(k), read_value(v)) for k, v in mapping.items()))  # see _reader
    if field.message_type is not None:
        if field.message_type.full_name.startswith("google.protobuf."):  # well-known types have JSON forms of their own
            from google.protobuf.json_format import MessageToDict

            one = functools.partial(MessageToDict, preserving_proto_field_name=True,
                                    always_print_fields_with_no_presence=True)
        else:
            nested = field.message_type  # looked up at each call: a type may contain itself
            one = lambda m: _reader(nested)(m)  # noqa: E731
    elif field.cpp_type in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        one = _number if field.cpp_type == FieldDescriptor.CPPTYPE_DOUBLE else _float32
    elif field.type == FieldDescriptor.TYPE_BYTES:
        one = _base64
    elif field.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        one = lambda v: names.get(v, v)  # noqa: E731 - an unknown number stays a number, as in protobuf's mapping
    else:
        one = None  # str, bool and integers are their own JSON values
    if field.is_repeated:
        return (lambda values: list(values)) if one is None else (lambda values: [one(v) for v in values])
    return _same if one is None else one


def _same(value):
    return value


def _number(value: float):
    """JSON has no NaN or infinities: protobuf's mapping writes them as strings."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _float32(value: float):
    return _number(value) if value != value or value in (math.inf, -math.inf) else type_checkers.ToShortestFloat(value)


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("utf-8")


def print_json(value, ordered: bool = False) -> None:
    """Indented for a person at a terminal; compact when piped, for scripts: the same JSON, and Python's C
    encoder only runs without indentation (more than twice as fast on a 10,000-job queue). `ordered`: every dict
    in `value` has its keys in order already, so piped, pydantic's Rust encoder writes it (as print_rows does)."""
    import json  # here: a table needs none of it

    if hasattr(value, "DESCRIPTOR"):
        value = as_dict(value)
    if sys.stdout.isatty():
        print(json.dumps(value, indent=2, sort_keys=True))
    elif ordered:
        from pydantic_core import to_json  # here: a table needs none of it, and its import is a large part of a call

        print(to_json(value).decode())
    else:
        print(json.dumps(value, sort_keys=True, separators=(",", ":")))


def print_rows(messages) -> None:
    """A listing's messages as a JSON array, as print_json would print it. Piped, the rows' dicts already have their
    keys in order (as_dict), so pydantic's Rust encoder writes them: a third of json's time on 10,000 jobs. It
    leaves non-ASCII characters as they are where json escapes them; both are the same JSON."""
    rows = [as_dict(x) for x in messages]
    if sys.stdout.isatty():
        print_json(rows)
    else:
        from pydantic_core import to_json

        print(to_json(rows).decode())
