"""One line per bad field from pydantic's errors: NaN, huge numbers and over-long text said in the user's words."""

from __future__ import annotations

import pytest
import yaml
from pydantic import BaseModel, Field, ValidationError

from vipu.errors import elided
from vipu.scheduler.config import SchedulerConfig
from vipu.validation import describe


class Bounded(BaseModel):
    x: float = Field(0.0, ge=0.0)
    n: int = 0


@pytest.mark.parametrize("data, want", [
    ({"x": float("nan")}, "x: nan is not a number; give at least 0.0"),  # regression: "nan is too small"
    ({"x": -1.0}, "x: -1.0 is too small; give at least 0.0"),
])
def test_a_bad_number_is_said_in_the_users_words(data, want):
    with pytest.raises(ValidationError) as e:
        Bounded.model_validate(data)
    assert describe(e.value, "thing") == f"invalid thing: {want}"


@pytest.mark.parametrize("text, seconds", [("5m", 300.0), ("'5:00'", 300.0), ("90", 90.0)])
def test_min_job_age_takes_slurm_times_as_the_other_durations_do(text, seconds):
    """Regression: min_job_age refused 5m."""
    assert SchedulerConfig.model_validate(yaml.safe_load(f"min_job_age: {text}")).min_job_age == seconds


def test_one_shortening_for_every_echoed_value():
    assert elided("name " + "x" * 20000 + " is bad") == f"name {'x' * 64}... (20,000 characters) is bad"


@pytest.mark.parametrize("after", [";", ":", ",", ".", "'", "');"])
def test_a_shortened_value_keeps_the_punctuation_after_it(after):
    """Regression: `vipu cancel -u <20,000 characters>` said "... (20,001 characters) nothing was done", its
    semicolon counted into the value and lost."""
    assert elided("user " + "x" * 20000 + after + " nothing was done") == (
        f"user {'x' * 64}... (20,000 characters){after} nothing was done")


def test_a_long_run_of_punctuation_is_cut_all_the_same():
    assert elided("x" * 400 + ";" * 400) == f"{'x' * 64}... (800 characters)"


def test_a_huge_whole_number_is_not_spelled_out():
    """Regression: ipus 1e308 printed a 309-digit suggestion."""
    from vipu.errors import InvalidArgument
    from vipu.scheduler.job_spec import load_spec

    with pytest.raises(InvalidArgument) as e:
        load_spec('{"ipus": 1e308}', "job.json")
    assert e.value.message.endswith("ipus: Input should be a valid integer, not 1e+308; write a whole number")


@pytest.mark.parametrize("text, want", [
    ("ipus: true", "ipus: Input should be a valid integer, not true; give a number, not true or false"),
    ("ipus: 4\nname: 123", "name: Input should be a valid string, not 123; quote it ('123') to give it as text"),
    ("ipus: 4\nname:", "name: Input should be a valid string, not null; give a value"),
    ("ipus: 4\ndependency: [1]", "dependency: Input should be a valid string, not a list; give one value"),
    ("ipus: 4\nhold: {a: 1}", "hold: Input should be a valid boolean, not a mapping; give one value"),
    ("ipus: four", "ipus: Input should be a valid integer, not 'four'; give a whole number"),
])
def test_a_value_of_the_wrong_type_is_said_as_yaml_writes_it_with_the_fix(text, want):
    """Regression: `ipus: true` said "not True" and `name: [a]` "Input should be a valid string", neither with a fix."""
    from vipu.errors import InvalidArgument
    from vipu.scheduler.job_spec import load_spec

    with pytest.raises(InvalidArgument) as e:
        load_spec(text, "job.yaml")
    assert e.value.message == f"invalid job.yaml: {want}"
