"""Task ranges as `vipu queue` prints them (N_[A-B,C]) taken by every command that takes several job ids, and the
exit code of a command whose ids fail for different reasons."""

from __future__ import annotations

import json

from tests.cli.test_cli_e2e import run
from tests.cli.test_job_ids_and_simulate import HELD, one_error
from tests.cli.test_jobs_e2e import jobs, show, submit


def test_the_task_range_queue_prints_is_a_job_id(server):
    tasks = submit(server, "--ipus", "1", "--time-limit", "1m", "--begin", "now+1h", "--array", "0-9")
    array = tasks[0]
    [row] = run(server, "vipu", "queue", "--no-header").stdout.splitlines()
    printed = row.split("|")[0].strip()
    assert printed == f"{array}_[0-9]"
    out = run(server, "vipu", "hold", printed)
    assert out.returncode == 0 and out.stdout.splitlines() == [f"Array job {array}: 10 tasks held"] + [
        f"Job {array}_{t} held: PENDING (held)" for t in range(10)], out.stderr

    out = run(server, "vipu", "release", f"{array}_[1-3,7]", f"{array}_2")  # each task once
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"Array job {array}: 4 tasks released"] + [
        f"Job {array}_{t} released: PENDING" for t in (1, 2, 3, 7)]
    assert [show(server, t)["held"] for t in tasks] == [t not in (1, 2, 3, 7) for t in range(10)]

    # the tasks there are are cancelled, those there are not named in one line
    out = run(server, "vipu", "cancel", f"{array}_[8-12]")
    assert out.returncode == 3
    assert out.stdout.splitlines() == [f"Array job {array}: 2 tasks cancelled"] + [
        f"Job {array}_{t} cancelled: CANCELLED" for t in (8, 9)]
    assert one_error(out) == (f"vipu: error: job id '{array}_[8-12]': array job {array} has no tasks 10-12; `vipu"
                              " queue` and `vipu history` list its tasks")

    before = {i: (x["job_state"][0], x["hold"]) for i, x in jobs(server).items()}
    for bad, line in [
        (f"{array}_[0-99999]", "names more than 10000 tasks, more than an array has"),
        (f"{array}_[3-1]", "range 3-1 runs backwards; write it as 1-3"),
        (f"{array}_[1,x]", "'x' is not a task index or range; use N, A-B or A-B:STEP, separated by commas, e.g."),
        (f"{array}_[0-8:0]", "a step of 0 names no tasks; give a step of 1 or more"),
        (f"{array}_[0-4000001]", "task index 4000001 is above the largest, 4000000"),
        (f"{array}_[]", "names no tasks; write tasks as N_[A-B,C]"),
        (f"{array}_[1-3%2]", "is not a job id (a %N limit is for `vipu submit --array`)"),
        (f"{array}_[1-3]%2", "is not a job id (a %N limit is for `vipu submit --array`)"),
        (f"{array}_[1-3", "is not a job id; write tasks as N_[A-B,C]"),
    ]:
        for command in ("cancel", "hold", "release", "requeue"):
            out = run(server, "vipu", command, "1", bad)  # one malformed id and nothing is done
            assert out.returncode == 2 and line in one_error(out), (command, bad, out.stderr)
    huge = "9" * 5000  # int() raises past 4,300 digits: each of these was a traceback
    for bad, line in [(f"{array}_[0-{huge}]", "digits) is larger than any array allows"), (huge, "is not a job id"),
                      (f"{huge}_[1]", "is not a job id"), (f"{array}_{huge}", "is not a job id")]:
        out = run(server, "vipu", "cancel", bad)
        assert out.returncode == 2 and line in one_error(out), (bad[:40], out.stderr[-300:])
    out = run(server, "vipu", "show", "job", f"{array}_[1-2]")
    assert out.returncode == 2 and one_error(out) == (
        f"vipu: error: job id '{array}_[1-2]' names 2 tasks, and here a job id is N or N_T: give the tasks one by one,"
        f" e.g. {array}_1")
    [single] = submit(server, *HELD)
    out = run(server, "vipu", "cancel", f"{single}_[0-1]")
    assert out.returncode == 2 and f"job id '{single}_[0-1]': job {single} is not an array job" in one_error(out)
    assert {i: (x["job_state"][0], x["hold"]) for i, x in jobs(server).items() if i != single} == before
    # walk26f: a range of more tasks than a line each (20) printed 100 lines; one summary, as for the whole array
    big = submit(server, *HELD, "--array", "0-29")[0]
    out = run(server, "vipu", "cancel", f"{big}_[0-24]", f"{big}_27")
    assert out.returncode == 0 and out.stdout.splitlines() == [f"Array job {big}: 25 tasks cancelled",
                                                               f"Job {big}_27 cancelled: CANCELLED"], out.stderr


def test_the_exit_code_of_several_failures_is_the_gravest_not_the_first(server):
    """`vipu cancel 25 26 999` with 25 and 26 ended exited 4 (conflict), the first failure's code, though 999 did
    not exist: not found outranks conflict, whatever the order of the ids."""
    ended = [submit(server, *HELD)[0] for _ in range(2)]
    assert run(server, "vipu", "cancel", *map(str, ended)).returncode == 0
    for ids in ([*ended, 999], [999, *ended]):
        out = run(server, "vipu", "cancel", *map(str, ids))
        assert out.returncode == 3, out.stderr
        assert sorted(out.stderr.splitlines()) == sorted(
            [f"vipu: error: job {i} already ended (CANCELLED); nothing to cancel" for i in ended]
            + ["vipu: error: job 999 does not exist; `vipu queue` lists active jobs and `vipu history` all jobs"])
    out = run(server, "vipu", "cancel", *map(str, ended))
    assert out.returncode == 4  # only conflicts: conflict
    out = run(server, "vipu", "hold", str(ended[0]), "998")
    assert out.returncode == 3


def test_a_stepped_array_is_one_short_range_in_the_queue_and_taken_back_as_printed(server):
    """Regression: `--array 0-4000000:1000` printed every index, a 31,000-character line; squeue folds the step."""
    tasks = submit(server, "--ipus", "1", "--time-limit", "1m", "--hold", "--array", "0-40:10")
    [row] = run(server, "vipu", "queue", "--no-header").stdout.splitlines()
    printed = row.split("|")[0].strip()
    assert printed == f"{tasks[0]}_[0-40:10]"
    out = run(server, "vipu", "cancel", printed)
    assert out.returncode == 0 and out.stdout.splitlines() == [f"Array job {tasks[0]}: 5 tasks cancelled"] + [
        f"Job {tasks[0]}_{t} cancelled: CANCELLED" for t in range(0, 41, 10)], out.stderr


def test_priority_takes_task_ranges_and_reports_each_id_that_is_not_pending(server):
    """`vipu priority 26_[1-3]` was refused with "give the tasks one by one"; it takes them as cancel does."""
    tasks = submit(server, "--ipus", "1", "--time-limit", "1m", "--begin", "now+1h", "--array", "0-5")
    array = tasks[0]
    assert run(server, "vipu", "cancel", f"{array}_4").returncode == 0

    def shown(out) -> list[str]:
        return [line.split("|")[0].strip() for line in out.stdout.splitlines()]

    out = run(server, "vipu", "priority", "--no-header", f"{array}_[1-3,5]", f"{array}_2")  # each task once
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert sorted(shown(out)) == [f"{array}_{t}" for t in (1, 2, 3, 5)]
    out = run(server, "vipu", "priority", "--json", f"{array}_[0-1]")
    assert out.returncode == 0 and sorted(int(x["job_id"]) for x in json.loads(out.stdout)) == tasks[:2]

    # what can be shown is, each id that cannot gets its line, and the exit code is the gravest failure's
    out = run(server, "vipu", "priority", "--no-header", f"{array}_[3-4]")
    assert out.returncode == 4 and shown(out) == [f"{array}_3"]
    assert one_error(out) == f"vipu: error: job {array}_4 is CANCELLED; only pending jobs have a priority"
    out = run(server, "vipu", "priority", "--no-header", f"{array}_[7-9]", f"{array}_0")
    assert out.returncode == 3 and shown(out) == [f"{array}_0"]
    assert one_error(out) == (f"vipu: error: job id '{array}_[7-9]': array job {array} has no tasks 7-9; `vipu"
                              " queue` and `vipu history` list its tasks")
    out = run(server, "vipu", "priority", f"{array}_[0-2]", f"{array}_[1-x]")  # one malformed id: nothing shown
    assert out.returncode == 2 and out.stdout == "" and "'1-x' is not a task index or range" in one_error(out)
