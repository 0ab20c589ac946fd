"""Where a controller without --secure writes a built-in workload's output: under the directory `vipu submit` ran in,
its state folder's job-output folder or an operator's --output-dir, never over a file it did not write for the job.

Regression: a spec's `output:` wrote any path as the server's OS user (a root-owned file was overwritten)."""

from __future__ import annotations

import json
import subprocess

from tests.cli_forks import run_script
from tests.cli.test_jobs_e2e import show, wait_for
from tests.conftest import console_script


def submit_in(server, cwd, *args: str, refused: bool = False):
    """The job's id; with `refused`, the one line of the submit's refusal (exit 2)."""
    out = run_script(console_script("vipu"), ["submit", "--ipus", "1", "--time-limit", "1m", "--duration", "0s",
                                              "--json", *args], env=server.env(), cwd=cwd)
    if refused:
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        return out.stderr.strip()
    assert out.returncode == 0, out.stderr
    return int(json.loads(out.stdout)["job_ids"][0])


def ended(server, job: int) -> dict:
    return wait_for(lambda: (x := show(server, job))["state"] in ("COMPLETED", "FAILED") and x)


def test_output_goes_only_under_the_submit_directory_and_never_over_a_file_it_did_not_write(server, tmp_path):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    ok = submit_in(server, home, "-o", "out-%j.txt")
    assert ended(server, ok)["state"] == "COMPLETED"
    written = home / f"out-{ok}.txt"
    assert wait_for(lambda: written.exists() and written.read_text()).startswith(f"vipu-sim job {ok} (job, user ")

    # a folder the run could never write in is refused at the submit, naming the flag and the fix
    assert submit_in(server, home, "-o", str(elsewhere / "x.txt"), refused=True) == (
        f"vipu: error: -o/--output file {elsewhere / 'x.txt'} is outside the folders this controller writes job output"
        f" into ({home}, {server.state_dir / 'job-output'}): give a path under one of them (a relative path is under"
        " where vipu submit runs), or ask the operator for another output folder (vipu-server's output-dir option)")
    assert submit_in(server, home, "-o", "gone/%j.txt", refused=True) == (
        f"vipu: error: -o/--output file {home / 'gone' / '%j.txt'}: its directory {home / 'gone'} does not exist;"
        " create it, or give a path in an existing directory (as sbatch, vipu never makes it)")
    assert not (elsewhere / "x.txt").exists() and not (home / "gone").exists()

    precious = home / "precious.txt"
    precious.write_text("not the controller's\n")
    over = submit_in(server, home, "-o", str(precious))
    job = ended(server, over)
    assert job["state"] == "FAILED" and precious.read_text() == "not the controller's\n"
    assert f"output file {precious} exists and was not written by this controller for job {over}" in job["detail"]["ended_by"]

    link = home / "link.txt"
    link.symlink_to(elsewhere / "target.txt")  # the folder is allowed, but the file is a way out of it
    through = submit_in(server, home, "-o", str(link))
    assert ended(server, through)["state"] == "FAILED" and not (elsewhere / "target.txt").exists()

    # what changes between the submit and the start is checked again at the start, and at a held job's release
    (server.state_dir / "job-output").mkdir()
    gate = submit_in(server, home, "--hold")
    linked = submit_in(server, home, "-o", str(server.state_dir / "job-output" / "in.txt"), "-d", f"afterany:{gate}")
    held = submit_in(server, home, "-o", str(server.state_dir / "job-output" / "held.txt"), "--hold")
    (server.state_dir / "job-output").rmdir()
    (server.state_dir / "job-output").symlink_to(elsewhere)  # made after the controller's start (which refuses one)
    refused = run_script(console_script("vipu"), ["release", str(held)], env=server.env())
    assert refused.returncode == 4 and "is outside the folders this controller writes job output into" in \
        refused.stderr, refused.stderr
    assert run_script(console_script("vipu"), ["cancel", str(gate)], env=server.env()).returncode == 0
    job = ended(server, linked)  # regression: COMPLETED, its output written in elsewhere through the link
    assert job["state"] == "FAILED" and not (elsewhere / "in.txt").exists()
    assert "is outside the folders this controller writes job output into" in job["detail"]["ended_by"]
    assert run_script(console_script("vipu"), ["cancel", str(held)], env=server.env()).returncode == 0
    (server.state_dir / "job-output").unlink()

    first_run = written.stat().st_ino
    requeued = subprocess.run([console_script("vipu"), "requeue", str(ok)], env=server.env(), capture_output=True,
                              text=True, timeout=60)
    assert requeued.returncode == 0, requeued.stderr  # its second run writes over the file of its first
    wait_for(lambda: written.stat().st_ino != first_run)  # written anew, whole
    assert written.read_text().startswith(f"vipu-sim job {ok} (job, user ")
    rerun = submit_in(server, home, "-o", written.name)  # a later job of the same user writes over it, as sbatch's
    assert ended(server, rerun)["state"] == "COMPLETED"
    wait_for(lambda: written.read_text().startswith(f"vipu-sim job {rerun} (job, user "))


def test_an_operators_output_dir_replaces_the_submit_directory(server_factory, tmp_path):
    shared, home = tmp_path / "shared", tmp_path / "home"
    shared.mkdir()
    home.mkdir()
    server = server_factory(extra=["--output-dir", str(shared)])
    there = submit_in(server, home, "-o", str(shared / "%j.out"))
    assert ended(server, there)["state"] == "COMPLETED"
    wait_for(lambda: (shared / f"{there}.out").exists())
    assert f"-o/--output file {home / 'here.out'} is outside the folders this controller writes job output into" \
           f" ({shared}, " in submit_in(server, home, "-o", "here.out", refused=True)
    assert not (home / "here.out").exists()


def test_an_output_dir_that_is_relative_or_missing_is_refused(tmp_path):
    from tests.server.test_startup import start

    for folder, why in (("rel", "an absolute path"), (str(tmp_path / "missing"), "an existing folder")):
        out = start("--port", "0", "--state-dir", str(tmp_path / "state"), "--output-dir", folder)
        assert out.returncode == 2 and out.stderr.strip() == (
            f"vipu-server: error: --output-dir {folder} is not {why}; give a folder that exists, as an absolute path")
    assert not (tmp_path / "state").exists()  # refused before the state was touched


def test_a_symlinked_job_output_folder_is_refused_at_start_and_nothing_made(tmp_path):
    """Regression: the controller wrote users' output through it, wherever it pointed."""
    from tests.server.test_startup import start

    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    state.mkdir(mode=0o700)
    elsewhere.mkdir()
    (state / "job-output").symlink_to(elsewhere)
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2 and out.stderr.strip() == (
        f"vipu-server: error: {state / 'job-output'} is a symlink; the controller writes job output into that folder"
        f" as its own user, never through a link: make it a folder (rm {state / 'job-output'} && mkdir"
        f" {state / 'job-output'}), or give the folder it points to as --output-dir")
    assert [p.name for p in state.iterdir()] == ["job-output"]


def submit_wrap(server, cwd, *args: str) -> int:
    out = subprocess.run([console_script("vipu"), "submit", "--ipus", "1", "--time-limit", "1m", "--json", *args],
                         cwd=cwd, env=server.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(json.loads(out.stdout)["job_ids"][0])


def test_a_batch_scripts_output_and_error_follow_the_same_rule_without_secure(server, tmp_path):
    """Regression: `vipu submit --wrap "echo hi" -o FILE` truncated any file the controller's user could write (a
    root-owned one), since only built-in workloads' output was checked."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    victim, precious = elsewhere / "victim", home / "precious.txt"
    victim.write_text("root's\n")
    precious.write_text("not the controller's\n")
    (home / "link.txt").symlink_to(elsewhere / "target.txt")
    for flag, what in (("-o", "output"), ("-e", "error")):  # refused at the submit: no run could write there
        out = run_script(console_script("vipu"), ["submit", "--ipus", "1", "--wrap", "echo hi", flag, str(victim)],
                         env=server.env(), cwd=home)
        assert out.returncode == 2 and out.stderr == (
            f"vipu: error: {flag}/--{what} file {victim} is outside the folders this controller writes job output into"
            f" ({home}, {server.state_dir / 'job-output'}): give a path under one of them (a relative path is under"
            " where vipu submit runs), or ask the operator for another output folder (vipu-server's output-dir"
            " option)\n"), out.stderr
    # a file there already: the start decides, as it may be gone (or made) by then
    cases = [("-o", str(precious), f"output file {precious} exists and was not written by this controller for job"),
             ("-o", str(home / "link.txt"), f"output file {home / 'link.txt'} exists and is not a plain file")]
    for flag, path, why in cases:
        job = submit_wrap(server, home, "--wrap", "echo hi", flag, path)
        detail = ended(server, job)
        assert detail["state"] == "FAILED" and why in json.dumps(detail), detail
        assert f"give {'--output' if flag == '-o' else '--error'} " in json.dumps(detail)  # and the fix
        logs = subprocess.run([console_script("vipu"), "logs", str(job)], env=server.env(), capture_output=True,
                              text=True, timeout=60).stdout
        assert why in logs and "root's" not in logs and "not the controller's" not in logs  # (it once showed them)
        shown = subprocess.run([console_script("vipu"), "show", "job", str(job)], env=server.env(),
                               capture_output=True, text=True, timeout=60).stdout
        assert f"EndedBy={why}" in shown, shown  # (it showed only Reason=NonZeroExitCode)
    assert victim.read_text() == "root's\n" and precious.read_text() == "not the controller's\n"
    assert not (elsewhere / "target.txt").exists()

    ok = submit_wrap(server, home, "--wrap", "echo run $SLURM_RESTART_COUNT; echo err >&2", "-o", "out-%j.txt",
                     "-e", "out-%j.txt")  # one file for both, as sbatch allows
    assert ended(server, ok)["state"] == "COMPLETED"
    written = home / f"out-{ok}.txt"
    assert sorted(written.read_text().splitlines()) == ["err", "run 0"]
    requeued = subprocess.run([console_script("vipu"), "requeue", str(ok)], env=server.env(), capture_output=True,
                              text=True, timeout=60)
    assert requeued.returncode == 0, requeued.stderr  # its second run writes over the file its first made
    wait_for(lambda: "run 1" in written.read_text())
    assert ended(server, ok)["state"] == "COMPLETED"

    # Regression (newcomer walk): a rerun with the same -o FAILED ("exists and was not written by this controller for
    # job N"); as sbatch's, it writes over the file the user's earlier job made, and another user's job does not
    rerun = submit_wrap(server, home, "--wrap", "echo rerun", "-o", written.name)
    assert ended(server, rerun)["state"] == "COMPLETED"
    assert written.read_text() == "rerun\n"
    other = submit_wrap(server, home, "--user", "someone-else", "--wrap", "echo theirs", "-o", written.name)
    detail = ended(server, other)
    assert detail["state"] == "FAILED" and f"output file {written} exists and was not written by this controller" \
        in json.dumps(detail) and written.read_text() == "rerun\n"
