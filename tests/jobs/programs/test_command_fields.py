"""A program's spec fields that exec or the environment cannot take are refused at submit, naming the field, the
item and the fix (command_spec.py); they used to pass and fail at start, or be named by a template never filled."""

from __future__ import annotations

import pytest

import vipu.jobs.programs.command_spec  # noqa: F401 - registers the command workload with JobSpec
from vipu.errors import InvalidArgument
from vipu.scheduler.job_spec import parse_spec


def refusal(**workload) -> str:
    with pytest.raises(InvalidArgument) as refused:
        parse_spec({"name": "p", "ipus": 1, "workload": {"kind": "command", "script": "#!/bin/sh\n",
                                                          "submit_dir": "/tmp", **workload}})
    return str(refused.value)


@pytest.mark.parametrize("name", ["A=B", "", "A\x00"])
def test_an_environment_name_exec_cannot_take_is_named(name):
    assert refusal(environment={name: "x"}) == (f"invalid job spec: workload.environment: has the variable {name!r};"
                                                " a name holds no = or NUL, and a value no NUL")


def test_an_argument_with_a_nul_byte_is_refused_at_submit_naming_its_item():
    assert refusal(args=["ok", "a\x00b"]) == ("invalid job spec: workload.args: item 1 is 'a\\x00b'; an argument holds"
                                              " no NUL byte")
