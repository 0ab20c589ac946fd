"""Slurm's output filename patterns, filled in for a job and for an array task."""

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
    assert output_path(pattern, job()) == "/out/train-ann/7.7_.log%%q"
    assert output_path(pattern, job(array_job_id=5, array_task_id=2)) == "/out/train-ann/7.5_2.log%%q"
    assert job(array_job_id=5, array_task_id=2).display_id == "5_2" and job().display_id == "7"


def test_a_width_zero_pads_a_number_as_sbatch_does():
    """Regression (walk28): `-o pad-%4A_%3a.out` was kept as written, so every task of an array wrote one file."""
    task = job(array_job_id=5, array_task_id=2)
    assert output_path("pad-%4A_%3a-%2j.out", task) == "pad-0005_002-07.out"
    assert output_path("%12j-%3x-%3a", job()) == "0000000007-train-"  # at most 10; a name and no task: no padding
