"""Array task indices: parse_array reads them (`--array`, and the task ranges of job ids), spans writes them back
as squeue does, and each undoes the other."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vipu.scheduler.arrays import MAX_ARRAY_INDEX, ArraySyntaxError, TooManyTasks, parse_array, spans

index_st = st.integers(0, MAX_ARRAY_INDEX)
# runs a step apart, as arrays are written (0-90:10), and scattered indices, merged: what squeue has to fold
run_st = st.tuples(index_st, st.integers(1, 50_000), st.integers(1, 40)).map(
    lambda r: range(r[0], min(r[0] + r[1] * r[2], MAX_ARRAY_INDEX + 1), r[1]))
indices_st = st.tuples(st.lists(run_st, max_size=4), st.lists(index_st, max_size=30)).map(
    lambda parts: sorted({i for run in parts[0] for i in run} | set(parts[1]))).filter(bool)


@settings(max_examples=300, deadline=None)
@given(indices_st)
def test_parse_array_takes_back_what_spans_writes(indices):
    assert parse_array(spans(indices)).indices == tuple(indices)


@pytest.mark.parametrize("indices,text", [
    ([0, 1, 2, 3, 7], "0-3,7"), ([0, 2, 3], "0,2-3"), ([5], "5"), ([1, 3], "1,3"), ([3, 4], "3-4"),
    (list(range(0, 4_000_001, 1000)), "0-4000000:1000"), ([0, 10, 20, 21, 22], "0-20:10,21-22"),
])
def test_spans_folds_runs_as_squeue_does(indices, text):
    assert spans(indices) == text


@pytest.mark.parametrize("text,problem,fix", [
    ("3-1", "range 3-1 runs backwards", "write it as 1-3"),
    ("0-8:0", "a step of 0 names no tasks", "give a step of 1 or more"),
    ("1,x", "'x' is not a task index or range", "use N, A-B or A-B:STEP, separated by commas, e.g. 1-3,7 or 0-90:10"),
    ("٣", "'٣' is not a task index or range", "use N, A-B or A-B:STEP"),  # int() reads other scripts' digits
    ("4000001", "task index 4000001 is above the largest, 4000000", "give indices from 0 to 4000000"),
    ("0-9%0", "the %N limit must be a whole number of at least 1", "e.g. 0-99%10 runs at most 10 at once"),
    # the limit, not a task index (walk28: it said "task indices go up to 4000000")
    ("0-3%99999999999", "the %N limit 99999999999 is more than any array runs at once",
     "give at most 10000, or leave out %N for no limit"),
])
def test_a_refusal_says_what_is_wrong_and_how_to_write_it(text, problem, fix):
    with pytest.raises(ArraySyntaxError) as e:
        parse_array(text)
    assert (e.value.problem, e.value.fix[:len(fix)]) == (problem, fix)
    assert str(e.value) == f"{text!r}: {e.value.problem}; {e.value.fix}"


@pytest.mark.parametrize("text", ["0-" + "9" * 5000, "0-9:" + "1" * 30, "0-9%" + "9" * 5000])
def test_a_number_of_thousands_of_digits_is_refused_in_a_short_line(text):
    """int() raises ValueError past 4,300 digits: a traceback from every command that reads task indices."""
    with pytest.raises(ArraySyntaxError) as e:
        parse_array(text)
    assert e.value.problem.endswith(("digits) is larger than any array allows (task indices go up to 4000000)",
                                     "digits) is more than any array runs at once"))
    assert len(str(e.value)) < 200


def test_too_many_tasks_is_its_own_refusal_so_each_caller_says_what_to_do_instead():
    with pytest.raises(TooManyTasks) as e:
        parse_array("0-99", max_tasks=10)
    assert e.value.problem == "names more than 10 tasks" and "split it into several arrays" in e.value.fix


def test_the_cli_reads_task_ranges_with_this_parser_and_still_loads_no_pydantic():
    """Every `vipu` command imports this module (job ids like 26_[1-3,7]), output_pattern.py (sbatch's output
    names, for `vipu submit` and `vipu show job`) and job_states.py (state names and codes, for -t/--states, an
    enum alone); the rest of the scheduler, and pydantic with its spec models,
    would cost each of them a large part of its start."""
    probe = ("import sys, vipu.cli.vipu_app; print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'"
             " or m.startswith('vipu.scheduler')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ["['vipu.scheduler',", "'vipu.scheduler.arrays',",
                                                          "'vipu.scheduler.job_states',",
                                                          "'vipu.scheduler.output_pattern']"], out
