"""JSON output: as_dict is protobuf's JSON mapping of every message of the API, with unset proto3 optionals, Timestamps
and Durations as null and 64-bit integers as numbers."""

from __future__ import annotations

import json
import math

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.json_format import MessageToDict
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.test_rpc_fuzz import SCALARS, message_strategy
from vipu.cli.output import TIMES, as_dict, print_json, print_rows
from vipu.v1 import admin_pb2, job_pb2, job_run_pb2, job_spec_pb2, partition_pb2

MESSAGES = sorted((m for module in (admin_pb2, job_pb2, job_run_pb2, job_spec_pb2, partition_pb2)
                   for m in module.DESCRIPTOR.message_types_by_name.values()),
                  key=lambda m: m.full_name)
INT64 = {FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64}
# made once: Hypothesis validates a strategy object at its first draw, and a new one per example cost most of the test
STRATEGIES = {m.full_name: message_strategy(m) for m in MESSAGES}
MAP_VALUES = {t: st.dictionaries(st.text(max_size=8), value, max_size=3) for t, value in SCALARS.items()}


def reference(message) -> dict:
    """What as_dict promises, from protobuf's own converter: null for each unset proto3 optional, Timestamp and
    Duration, int64 as a number."""
    data = MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    return _shape(message.DESCRIPTOR, data)


def _shape(descriptor, data: dict) -> dict:
    for f in descriptor.fields:
        value = data.get(f.name)
        if f.containing_oneof is not None and f.containing_oneof.name == "_" + f.name:
            data.setdefault(f.name, None)
        if f.message_type is not None and f.message_type.full_name in TIMES and f.containing_oneof is None:
            data.setdefault(f.name, None)  # an unset time is null too
        if f.message_type is not None and f.message_type.GetOptions().map_entry and value:
            if f.message_type.fields_by_name["value"].cpp_type in INT64:  # map<string, int64>: numbers too
                data[f.name] = {k: int(v) for k, v in value.items()}
        elif f.cpp_type in INT64 and value is not None:
            data[f.name] = [int(v) for v in value] if f.is_repeated else int(value)
        elif f.message_type is not None and not f.message_type.GetOptions().map_entry and value is not None \
                and not f.message_type.full_name.startswith("google.protobuf."):  # those have JSON forms of their own
            for item in value if f.is_repeated else [value]:
                _shape(f.message_type, item)
    return data


def same(a, b) -> bool:
    """Equal, with NaN equal to itself (both sides write it as the string "NaN", but a float NaN may be nested)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def in_order(value) -> bool:
    """Every object's keys, at every depth, in the order json's sort_keys gives them."""
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(in_order(v) for v in value.values())
    return all(in_order(v) for v in value) if isinstance(value, list) else True


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_every_message_of_the_api_converts_as_protobuf_does(data):
    for descriptor in MESSAGES:
        message = data.draw(STRATEGIES[descriptor.full_name], label=descriptor.name)
        for field in descriptor.fields:  # message_strategy leaves maps out
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                value = field.message_type.fields_by_name["value"]
                if value.message_type is None:
                    getattr(message, field.name).update(data.draw(MAP_VALUES[value.type]))
        converted = as_dict(message)
        assert same(converted, reference(message)), descriptor.name
        assert in_order(converted), descriptor.name  # print_rows writes them without sorting


def test_an_unset_optional_is_null_and_ids_are_numbers():
    job = as_dict(job_pb2.Job(id=2**40, name="x", start_time=0.0))
    assert job["id"] == 2**40 and job["start_time"] == 0.0 and job["end_time"] is None and job["array_job_id"] is None
    assert job["partition"] == "" and job["held"] is False


def test_json_has_no_bare_nan_or_infinity():
    job = as_dict(job_pb2.Job(priority=math.nan, time_limit_s=math.inf, submit_time=-math.inf))
    assert (job["priority"], job["time_limit_s"], job["submit_time"]) == ("NaN", "Infinity", "-Infinity")


def test_a_piped_listing_is_the_json_print_json_writes(capsys):
    jobs = [job_pb2.Job(id=i, name=name, user="ünï", start_time=1.5) for i, name in enumerate(["a", "b\"c", "d\n"])]
    print_rows(jobs)
    rows = capsys.readouterr().out
    print_json([as_dict(x) for x in jobs])
    assert json.loads(rows) == json.loads(capsys.readouterr().out) == [as_dict(x) for x in jobs]
    assert rows.count("\n") == 1 and '"user":"ünï"' in rows  # one line, compact, in UTF-8
    assert rows.index('"end_time":null') < rows.index('"id":0') < rows.index('"name":"a"')  # keys in order
