"""Slurm's output filename patterns, filled in for a job and for an array task."""

import pytest

from vipu.scheduler.job_record import Job, Transition
from vipu.scheduler.output_pattern import output_path
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import JobState


def job(**fields) -> Job:
    spec = parse_spec({"ipus": 4, "time_limit": "1m", "qos": "normal"})
    return Job(id=7, name="train", user="ann", partition="slurm_7", spec=spec, state=JobState.PENDING,
               submit_time=0.0, history=[Transition(JobState.PENDING, 0.0)], **fields)


def test_patterns_of_a_job_and_of_an_array_task():
    pattern = "/out/%x-%u/%j.%A_%a.log%%%q"
    assert output_path(pattern, job()) == "/out/train-ann/7.7_4294967294.log%%q"  # %a: Slurm's NO_VAL
    assert output_path(pattern, job(array_job_id=5, array_task_id=2)) == "/out/train-ann/7.5_2.log%%q"
    assert job(array_job_id=5, array_task_id=2).display_id == "5_2" and job().display_id == "7"


def test_a_width_zero_pads_a_number_as_sbatch_does():
    """Regression (walk28): `-o pad-%4A_%3a.out` was kept as written, so every task of an array wrote one file."""
    task = job(array_job_id=5, array_task_id=2)
    assert output_path("pad-%4A_%3a-%2j.out", task) == "pad-0005_002-07.out"
    assert output_path("%12j-%3x-%3a", job()) == "0000000007-train-4294967294"  # at most 10; a name: no padding


@pytest.mark.parametrize("pattern, node, expected", [
    # Regression (newcomer walk): %N %n %s %t %J were kept as written
    ("n-%N-%t.out", "ag03", "n-ag03-0.out"),  # the job's first node; the script is task 0
    ("%J.out", "ag03", "7.out"),  # walk40: the batch script's files get the job id alone, as Slurm 22.05's
    ("%j-%s-%n.out", "ag03", "7-batch-0.out"),
    ("%4J-%3n-%2t-%3s", "ag03", "0007-000-00-batch"),  # a width pads the numbers, not a step's name
    ("%N-%%N-%u-%x", "machine12", "machine12-%N-ann-train"),
    ("%N.out", None, "%N.out"),  # no node yet (a pending job's refusal check): kept as written
    ("%a-%A", "ag00", "4294967294-7"),  # outside an array, as sbatch
])
def test_the_step_and_node_patterns(pattern, node, expected):
    assert output_path(pattern, job(), node) == expected


def test_an_array_tasks_step_patterns():
    assert output_path("%A_%a-%J-%N", job(array_job_id=5, array_task_id=2), "ag01") == "5_2-7-ag01"
