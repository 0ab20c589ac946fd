"""Spec and config text: YAML or JSON, refusals that name the source and say what to fix."""

from __future__ import annotations

import pytest

from vipu.documents import read_document
from vipu.errors import InvalidArgument


@pytest.mark.parametrize("text, said", [
    ("ipus: 4\nsteps: " + "1" * 5000, "invalid job spec: the number at line 2 has 5,000 digits; no field takes one"),
    ('{"ipus": ' + "1" * 5000 + "}", "invalid job spec: a number has more than 4,300 digits; no field takes one"),
    ("ipus: 4\nipus: 8", "invalid job spec: field 'ipus' is given twice (line 2); keep one"),
])
def test_text_no_field_could_take_is_refused_naming_the_source(text, said):
    """Regression: a 5,000-digit number gave Python's own advice to raise sys.set_int_max_str_digits()."""
    with pytest.raises(InvalidArgument) as e:
        read_document(text, "job spec")
    assert str(e.value).startswith(said)


def test_numbers_yaml_writes_other_ways_still_read():
    assert read_document("a: 0x1F\nb: 1_000\nc: -7", "job spec") == {"a": 31, "b": 1000, "c": -7}


@pytest.mark.parametrize("text, said", [
    ("ipus: 1\nbegin: 2026-13-45\n", "begin: '2026-13-45' is not a time"),
    ("ipus: 1\nbegin: 2026-02-30\n", "begin: '2026-02-30' is not a time"),
    ("ipus: 1\nbegin: !!timestamp 2026-13-45\n", "begin: '2026-13-45' is not a time"),
])
def test_an_unquoted_invalid_date_is_refused_naming_its_field(text, said):
    """Regression (issue 23, walk23c item 3): PyYAML built the date itself, and its ValueError was reported as
    "a number has more than 4,300 digits", naming no field."""
    from vipu.scheduler.job_spec import load_spec

    with pytest.raises(InvalidArgument) as e:
        load_spec(text, "s2.yaml")
    assert said in str(e.value) and "4,300" not in str(e.value)


def test_an_unquoted_invalid_date_in_the_scheduler_config_names_its_field(tmp_path):
    from vipu.scheduler.config import load_scheduler_config

    (tmp_path / "bc.yaml").write_text("min_job_age: 2026-13-45\n")
    with pytest.raises(InvalidArgument) as e:
        load_scheduler_config(str(tmp_path / "bc.yaml"), None)
    assert "min_job_age" in str(e.value) and "2026-13-45" in str(e.value) and "4,300" not in str(e.value)


def test_a_document_nested_past_the_limit_is_refused_before_yaml_reads_it(monkeypatch):
    """PyYAML recursed about a second of CPU before its RecursionError: a 4 KB request cost the server that much."""
    import yaml

    from vipu import documents

    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("read by PyYAML"))
    with pytest.raises(InvalidArgument, match="nests lists or mappings deeper than it can be read"):
        documents.read_document("[" * 2000 + "]" * 2000, "job spec")
    with pytest.raises(InvalidArgument, match="nests lists or mappings deeper"):
        documents.read_document("a: " + "{b: " * 101 + "1" + "}" * 101, "job spec")
    monkeypatch.undo()
    nested: list = []
    for _ in range(99):
        nested = [nested]
    assert documents.read_document("a: " + "[" * 100 + "]" * 100, "job spec") == {"a": nested}
    assert documents.read_document("script: 'test [[ -n x ]] ] ] ]'", "job spec") == {"script": "test [[ -n x ]] ] ] ]"}
