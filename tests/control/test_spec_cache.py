"""Specs validated once per distinct text (vipu/control/spec_cache.py): the same text gives the same spec, fields
set over it are keyed too, refusals are worked out each time, and the cache stays bounded."""

from __future__ import annotations

import pytest

from vipu.control.spec_cache import SpecCache
from vipu.errors import InvalidArgument
from vipu.scheduler.job_spec import load_spec, parse_spec

TEXT = b"name: a\nipus: 4\ntime_limit: 10m\n"


def test_the_same_text_is_validated_once_and_gives_what_load_spec_gives():
    cache = SpecCache()
    first = cache.load(TEXT, "a.yaml")
    assert cache.load(TEXT, "a.yaml") is first
    assert first == load_spec(TEXT, "a.yaml")


def test_fields_set_over_a_spec_are_part_of_the_key():
    cache = SpecCache()
    spec = cache.load(TEXT, "a.yaml")
    alice = cache.with_fields(TEXT, spec, {"user": "alice"}, "a.yaml")
    assert alice.user == "alice" and cache.with_fields(TEXT, spec, {"user": "alice"}, "a.yaml") is alice
    bob = cache.with_fields(TEXT, spec, {"user": "bob", "workload": {"kind": "sleep", "duration": "1s"}}, "a.yaml")
    assert bob == parse_spec({**spec.model_dump(exclude_unset=True), "user": "bob",
                              "workload": {"kind": "sleep", "duration": "1s"}}, "a.yaml")


def test_a_refused_spec_is_refused_each_time_with_its_message():
    cache = SpecCache()
    for _ in range(2):
        with pytest.raises(InvalidArgument, match="b.yaml"):
            cache.load(b"name: b\nipus: 4\nbogus: 1\n", "b.yaml")
    assert cache._specs == {}


def test_the_cache_starts_again_past_its_size():
    cache = SpecCache(kept=2)
    for n in range(3):
        cache.load(f"name: j{n}\nipus: 4\ntime_limit: 10m\n", "x")
    assert len(cache._specs) == 1
