"""vipu submit's check for an earlier state's slurm-%j.out: held first only when the folder has such files, then
released unless the job's own default file exists (an array task's slurm-%A_%a.out) and the controller would not
write over it (another writer's file, not one it made for the user's earlier jobs)."""

from __future__ import annotations

import json

from vipu.cli.earlier_output import held_for_check, release_clear, held_note
from vipu.v1 import job_pb2 as j


def request(folder, **fields) -> j.SubmitJobRequest:
    spec = {"ipus": 1, "workload": {"kind": "command", "script": "#!/bin/sh\n", "submit_dir": str(folder)}, **fields}
    return j.SubmitJobRequest(spec=json.dumps(spec).encode())


class Released:
    """The CLI's connection, as far as release_clear calls it: the ids each ReleaseJobs named, by call (the
    command's) and attempt (the controller may refuse: the ids in `refused`, whose files it did not write)."""

    def __init__(self, refused=()):
        self.calls: list[list[int]] = []
        self.attempts: list[list[int]] = []
        self.refused = set(refused)
        self.conn = self
        self.jobs = self

    def ReleaseJobs(self, request):  # noqa: N802 - the RPC's name
        return request

    def call(self, method, request):
        self.calls.append(list(request.ids))
        assert request.single  # each id that one job: an array task by its own id

    def attempt(self, method, request):
        self.attempts.append(list(request.ids))
        assert request.single
        return None if self.refused & set(request.ids) else request  # a refusal releases none of them


def test_a_clear_folder_or_a_named_output_or_a_held_job_is_submitted_as_given(tmp_path):
    (tmp_path / "other.out").write_text("")
    clear = request(tmp_path)
    assert held_for_check(clear) is None and "hold" not in json.loads(clear.spec)
    (tmp_path / "slurm-9.out").write_text("old")
    for given in (request(tmp_path, output="o.txt"), request(tmp_path, hold=True)):
        before = given.spec
        assert held_for_check(given) is None and given.spec == before and not given.held
    assert held_for_check(clear) == tmp_path and clear.held  # held by the request: the spec keeps no hold (walk22d)
    assert "hold" not in json.loads(clear.spec)


def test_a_job_is_held_first_and_only_a_task_whose_file_exists_stays_held(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "slurm-5_2.out").write_text("old")
    given = request(tmp_path, array="0-4:2", workload={"kind": "command", "script": "#!/bin/sh\n",
                                                       "submit_dir": str(tmp_path), "chdir": str(run)})
    assert held_for_check(given) == run and given.held
    cli = Released(refused=[6])
    release_clear(cli, given, j.SubmitJobResponse(job_ids=[5, 6, 7]), run)
    assert (cli.calls, cli.attempts) == ([[5, 7]], [[6]])  # tasks 0 and 4; task 2 (job 6) stays held
    assert capsys.readouterr().err == (f"vipu: job 5_2 is held: {run}/slurm-5_2.out exists, and the controller"
                                       " writes over no output file it did not write for this job or your earlier"
                                       " ones; remove or rename that file, then `vipu release 5_2` (or submit with"
                                       " -o/--output)\n")


def test_a_file_the_controller_would_write_over_keeps_no_job_held_and_says_nothing(tmp_path, capsys):
    """walk29: the user's own slurm-*.out, which the controller made for an earlier job of theirs (its writer mark),
    is written over as sbatch's rerun writes over its file: only another writer's file keeps its job held."""
    for task in (0, 1, 2):
        (tmp_path / f"slurm-5_{task}.out").write_text("old")
    given = request(tmp_path, array="0-2")
    assert held_for_check(given) == tmp_path
    ours = Released()
    release_clear(ours, given, j.SubmitJobResponse(job_ids=[5, 6, 7]), tmp_path)
    assert (ours.calls, ours.attempts, capsys.readouterr().err) == ([], [[5, 6, 7]], "")  # all at once
    mixed = Released(refused=[6])  # 5_1's file is another writer's: the others are released one by one
    release_clear(mixed, given, j.SubmitJobResponse(job_ids=[5, 6, 7]), tmp_path)
    assert mixed.attempts == [[5, 6, 7], [5], [6], [7]]
    assert capsys.readouterr().err.splitlines() == [
        f"vipu: job 5_1 is held: {tmp_path}/slurm-5_1.out exists, and the controller writes over no output file it"
        " did not write for this job or your earlier ones; remove or rename that file, then `vipu release 5_1` (or"
        " submit with -o/--output)"]


def test_test_only_says_when_the_submit_would_be_held_for_the_jobs_own_file(tmp_path):
    """sbatch --test-only answers for the submit itself: the job id it would get meets an old slurm-N.out."""
    assert held_note(request(tmp_path), 7) is None  # a clear folder
    (tmp_path / "slurm-3.out").write_text("old\n")
    assert held_note(request(tmp_path), 7) is None  # other files: job 7's own is free
    (tmp_path / "slurm-7.out").write_text("old\n")
    assert held_note(request(tmp_path), 7) == (
        f"vipu: if queued now, job 7 would be held unless the controller wrote {tmp_path / 'slurm-7.out'} for your"
        " earlier job: remove or rename that file, or give -o/--output")
    assert held_note(request(tmp_path, output=str(tmp_path / "o.txt")), 7) is None  # its own output named
