"""`vipu show job` says what a job runs as scontrol's Command= and WorkDir=, where it printed its spec as JSON."""

from __future__ import annotations

from vipu.cli.batch_detail import built_in_stdout
from vipu.cli.job_detail import workload_fields
from vipu.v1 import job_pb2 as j

MLP = {"kind": "mlp", "dtype": "fp32", "layers": 8, "hidden": 64, "inputs": 32, "outputs": 10}
LAYOUT = {"t": 1, "t2": 1, "p": 4, "r": 1, "micro_batch": 8, "micro_batches": 8, "schedule": "1f1b",
          "recompute": False, "rts": False, "offload_optimizer": False, "phased": False, "io_tiles": 0}
TRAIN = {"kind": "train", "model": MLP, "layout": LAYOUT, "optimizer": "sgd", "master_weights": True, "steps": 20,
         "learning_rate": 0.05, "seed": 2, "execute": True, "synthetic_data": None}


def test_each_workload_is_a_command_line_and_its_submit_dir_the_workdir():
    assert workload_fields({"workload": {"kind": "sleep", "duration": 30.0, "exit_code": 0},
                            "submit_dir": "/home/a"}) == [("Command", "(sleep 0:30)"), ("WorkDir", "/home/a")]
    assert workload_fields({"workload": {"kind": "sleep", "duration": 5400.0, "exit_code": 3},
                            "submit_dir": None}) == [("Command", "(sleep 1:30:00, then exit 3)"), ("WorkDir", "(null)")]
    assert workload_fields({"workload": {"kind": "sleep", "duration": 0.1, "exit_code": 0}})[0] == (
        "Command", "(sleep 0.1s)")
    assert workload_fields({"workload": {"kind": "hold"}, "submit_dir": "/w"}) == [
        ("Command", "(hold: until cancelled or its time limit)"), ("WorkDir", "/w")]
    assert workload_fields({"workload": TRAIN, "submit_dir": "/w"})[0] == (
        "Command", "(train mlp 8 layers, 32->64->10, fp32; t=1 p=4 r=1, micro-batch 8 x 8 (1f1b); sgd, 20 steps,"
                   " learning rate 0.05, seed 2)")


def test_a_train_workload_says_what_it_sets_beyond_the_defaults():
    work = {**TRAIN, "master_weights": False, "synthetic_data": True, "execute": False,
            "layout": {**LAYOUT, "recompute": True, "io_tiles": 32}}
    assert workload_fields({"workload": work})[0] == (
        "Command", "(train mlp 8 layers, 32->64->10, fp32; t=1 p=4 r=1, micro-batch 8 x 8 (1f1b) with recomputation,"
                   " 32 I/O tiles; sgd, 20 steps, learning rate 0.05, seed 2; no fp32 master weights; synthetic data;"
                   " modelled: computes nothing)")


def test_a_built_in_jobs_stdout_is_its_pattern_filled_in_as_its_file_is_named():
    """As scontrol fills StdOut=: %j, %x, %A and %a as the controller names the file it writes (%N as written)."""
    job = j.Job(id=21, name="job", user="u")
    assert built_in_stdout(job, {"output": "/w/s-%j-%x.out", "submit_dir": "/w"}) == "/w/s-21-job.out"
    assert built_in_stdout(job, {"output": "out-%N.txt", "submit_dir": "/w"}) == "/w/out-%N.txt"
    task = j.Job(id=22, name="a", user="u", array_job_id=20, array_task_id=2)
    assert built_in_stdout(task, {"output": "/w/%A_%a.out"}) == "/w/20_2.out"
    assert built_in_stdout(job, {"submit_dir": "/w"}) == "(null)"  # a built-in writes no file unless asked
