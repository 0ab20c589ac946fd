"""`vipu logs -f` against a real controller (--ray off): a program's output as it comes, nothing twice, a line not
ended yet as far as it has come; the follow ends by itself once the job has ended, saying its state and exit code on
stderr; a pending job is said to be pending first; Ctrl-C ends it quietly. And `vipu logs N` of an array job: every
task's output, under a header each.
(A training run's follow: tests/server/test_training_logs.py.)"""

from __future__ import annotations

import errno
import json
import os
import queue
import subprocess
import threading

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for
from tests.cli.test_squeue_e2e import as_from_a_terminal, interrupted
from tests.conftest import console_script
from tests.jobs.programs.test_programs_e2e import ended, spec_file


class Follower:
    """`vipu logs -f ...` as a process of its own, its stdout and stderr read line by line as they come, in order."""

    def __init__(self, server, *args: str):
        self.proc = subprocess.Popen([console_script("vipu"), "logs", "-f", *args], env=server.env(),
                                     cwd=server.state_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, preexec_fn=as_from_a_terminal)  # Ctrl-C reaches it as from a shell
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # its end

    def next(self) -> str | None:
        return self.lines.get(timeout=60)

    def rest(self) -> list[str]:
        """Every line until it exits, once it has."""
        out = []
        while (line := self.next()) is not None:
            out.append(line)
        self.proc.wait(timeout=60)
        return out


def let_through(fifo) -> None:
    """Let the program past its next `read x < fifo`: once it has the fifo open to read, a line down it."""
    def writer():
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            return None

    fd = wait_for(writer)
    os.write(fd, b"\n")
    os.close(fd)


@pytest.fixture
def controller(server_factory):
    return server_factory(pod="bow-pod16", extra=["--kill-wait", "1"])


def test_follow_prints_a_programs_lines_as_they_come_and_ends_with_its_state(controller, tmp_path):
    os.mkfifo(tmp_path / "go1")
    os.mkfifo(tmp_path / "go2")  # (one fifo twice: a line sent before the first read's close could be lost)
    script = ("#!/bin/sh\necho first\nread x < go1\nprintf sec\nread x < go2\necho ond\necho third\n"
              "printf 'no newline'\nexit 3\n")
    [job] = submit(controller, spec_file(tmp_path, script, "pieces"))
    follower = Follower(controller, str(job))
    assert follower.next() == "first"
    let_through(tmp_path / "go1")  # it writes "sec", half a line, then the rest: one line
    let_through(tmp_path / "go2")
    assert follower.rest() == ["second", "third", "no newline", f"job {job} ended FAILED, exit code 3:0"]
    assert follower.proc.returncode == 0
    # an ended job: what it printed and how it ended, at once; stdout is its output file as it is, stderr vipu's word
    again = run(controller, "vipu", "logs", "-f", str(job))
    assert (again.returncode, again.stdout) == (0, "first\nsecond\nthird\nno newline")
    assert again.stderr == f"\njob {job} ended FAILED, exit code 3:0\n"  # (the open line ended first)
    missing = run(controller, "vipu", "logs", "-f", "999")
    assert missing.returncode == 3 and "job 999 does not exist" in missing.stderr


def test_follow_shows_a_line_as_far_as_the_program_has_written_it(controller, tmp_path):
    """A progress bar (carriage returns, no newline until it is done) shows as it goes, as tail -f shows it; it was
    held back until its newline came."""
    os.mkfifo(tmp_path / "go")
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\nprintf '10%%\\r20%%'\nread x < go\necho ' done'\n",
                                         "bar"))
    follower = subprocess.Popen([console_script("vipu"), "logs", "-f", str(job)], env=controller.env(),
                                cwd=controller.state_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = bytearray()
    threading.Thread(target=lambda: [seen.extend(chunk) for chunk in iter(lambda: os.read(
        follower.stdout.fileno(), 4096), b"")], daemon=True).start()
    wait_for(lambda: bytes(seen) == b"10%\r20%")  # no newline yet: shown all the same
    let_through(tmp_path / "go")
    assert follower.wait(timeout=60) == 0
    wait_for(lambda: bytes(seen).endswith(b"\n"))
    assert bytes(seen) == b"10%\r20% done\n"  # the output file's bytes alone
    assert follower.stderr.read() == f"job {job} ended COMPLETED, exit code 0:0\n".encode()
    whole = subprocess.run([console_script("vipu"), "logs", str(job)], env=controller.env(), capture_output=True,
                           timeout=60)  # bytes: text mode would read the carriage return as a newline
    assert (whole.returncode, whole.stdout) == (0, b"10%\r20% done\n")  # as cat shows the file


def test_follow_of_a_pending_job_waits_for_it_and_json_is_one_object_a_line(controller, tmp_path):
    os.mkfifo(tmp_path / "go")
    [holder] = submit(controller, spec_file(tmp_path, "#!/bin/sh\nread x < go\n", "holder", ipus=16))
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho hello\necho world\n", "after"))
    wait_for(lambda: show(controller, holder)["state"] == "RUNNING" and show(controller, job)["reason"] == "Resources")
    as_json = Follower(controller, "--json", str(job))
    assert json.loads(as_json.next()) == {"job": str(job), "state": "PENDING", "reason": "Resources"}
    stopped = Follower(controller, str(job))
    assert stopped.next() == f"job {job} is pending (Resources): its output follows once it starts"
    assert interrupted(stopped.proc) == 130  # Ctrl-C
    assert stopped.rest() == []
    let_through(tmp_path / "go")
    assert [json.loads(line) for line in as_json.rest()] == [
        {"job": str(job), "line": "hello"}, {"job": str(job), "line": "world"},
        {"job": str(job), "state": "COMPLETED", "exit_code": 0, "signal": 0}]
    assert as_json.proc.returncode == 0 and ended(controller, holder)["state"] == "COMPLETED"


def test_logs_of_an_array_show_every_task_under_a_header(controller, tmp_path):
    """Slurm writes a file per task (slurm-%A_%a.out); `vipu logs N` showed task 0's alone, as if it were all."""
    array, *_ = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho task $SLURM_ARRAY_TASK_ID\n", "arr",
                                            array="0-2"))
    tasks = [f"{array}_{t}" for t in range(3)]
    wait_for(lambda: run(controller, "vipu", "history", "-n", "-o", "State", "-P", "-j", str(array)).stdout.split()
             == ["COMPLETED"] * 3)
    shown = run(controller, "vipu", "logs", str(array))
    assert shown.returncode == 0 and shown.stdout.split("\n\n") == [
        f"==> job {task} (COMPLETED) <==\ntask {t}" for t, task in enumerate(tasks[:2])] + [
        f"==> job {tasks[2]} (COMPLETED) <==\ntask 2\n"]
    assert run(controller, "vipu", "logs", tasks[1]).stdout == "task 1\n"  # one task: its own, no header
    data = json.loads(run(controller, "vipu", "logs", str(array), "--json").stdout)
    assert [(x["job"], x["lines"]) for x in data["tasks"]] == [(task, [f"task {t}"]) for t, task in enumerate(tasks)]
    followed = run(controller, "vipu", "logs", "-f", str(array))
    assert followed.returncode == 0 and followed.stdout.split("\n\n") == [
        f"==> job {task} <==\ntask {t}" for t, task in enumerate(tasks)][:2] + [f"==> job {tasks[2]} <==\ntask 2\n"]
    assert followed.stderr.splitlines() == [f"job {task} ended COMPLETED, exit code 0:0" for task in tasks]


def test_logs_of_a_program_that_never_ran_say_why_and_a_follow_says_each_new_reason(controller, tmp_path):
    """walk34: `vipu logs` of a pending or never-started program said only programs and `train` workloads log; and
    a follow said a pending job's reason once, never its change (JobHeldUser, then Resources after a release)."""
    os.mkfifo(tmp_path / "go")
    [holder] = submit(controller, spec_file(tmp_path, "#!/bin/sh\nread x < go\n", "holder", ipus=16))
    [job] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho hello\n", "after"), "--hold")
    array, *_ = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho task\n", "arr", array="0-1"))
    [gone] = submit(controller, spec_file(tmp_path, "#!/bin/sh\necho never\n", "gone"), "--hold")
    wait_for(lambda: show(controller, holder)["state"] == "RUNNING")
    assert run(controller, "vipu", "logs", str(job)).stdout == f"job {job} is pending (JobHeldUser): no output yet\n"
    assert run(controller, "vipu", "cancel", str(gone)).returncode == 0
    never = f"job {gone} never ran: it ended CANCELLED before it started\n"
    assert run(controller, "vipu", "logs", str(gone)).stdout == never
    followed = run(controller, "vipu", "logs", "-f", str(gone))
    assert (followed.stdout, followed.stderr) == ("", never)  # a follow says the same (walk35), on stderr
    tasks = [f"{array}_{t}" for t in range(2)]
    why = wait_for(lambda: all(r := [show(controller, task)["reason"] for task in tasks]) and r)
    assert run(controller, "vipu", "logs", str(array)).stdout == "\n\n".join(
        f"==> job {task} (PENDING) <==\njob {task} is pending ({r}): no output yet" for task, r in zip(tasks, why)) + "\n"
    assert run(controller, "vipu", "cancel", str(array)).returncode == 0  # (the job below is then next in line)
    text, as_json = Follower(controller, str(job)), Follower(controller, "--json", str(job))
    assert text.next() == f"job {job} is pending (JobHeldUser): its output follows once it starts"
    assert json.loads(as_json.next()) == {"job": str(job), "state": "PENDING", "reason": "JobHeldUser"}
    assert run(controller, "vipu", "release", str(job)).returncode == 0
    assert text.next() == f"job {job} is pending (Resources): its output follows once it starts"
    assert json.loads(as_json.next()) == {"job": str(job), "state": "PENDING", "reason": "Resources"}
    let_through(tmp_path / "go")
    assert text.rest() == ["hello", f"job {job} ended COMPLETED, exit code 0:0"]  # each reason once, not each poll
    assert [json.loads(line) for line in as_json.rest()] == [
        {"job": str(job), "line": "hello"}, {"job": str(job), "state": "COMPLETED", "exit_code": 0, "signal": 0}]


def test_a_line_left_open_that_a_header_ended_is_not_ended_again(controller, tmp_path):
    """Regression: following an array, a task's line left open was ended on the screen by the next task's header;
    when the program ended it, that newline showed again, as an empty line under the task's next header."""
    os.mkfifo(tmp_path / "go0")
    os.mkfifo(tmp_path / "go1")
    script = ('#!/bin/sh\nif [ "$SLURM_ARRAY_TASK_ID" = 0 ]; then printf a; read x < go0; printf "\\nx\\n"\n'
              "else read x < go1; echo b; fi\n")
    array, *_ = submit(controller, spec_file(tmp_path, script, "open", array="0-1"))
    first, second = f"{array}_0", f"{array}_1"
    wait_for(lambda: show(controller, second)["state"] == "RUNNING" and show(controller, first)["state"] == "RUNNING"
             and run(controller, "vipu", "logs", first).stdout == "a\n")
    follower = subprocess.Popen([console_script("vipu"), "logs", "-f", str(array)], env=controller.env(),
                                cwd=controller.state_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = bytearray()  # stdout and stderr (how each task ended) as the screen shows them
    threading.Thread(target=lambda: [seen.extend(chunk) for chunk in iter(lambda: os.read(
        follower.stdout.fileno(), 4096), b"")], daemon=True).start()
    wait_for(lambda: bytes(seen) == f"==> job {first} <==\na".encode())
    let_through(tmp_path / "go1")
    wait_for(lambda: bytes(seen).endswith(f"job {second} ended COMPLETED, exit code 0:0\n".encode()))
    let_through(tmp_path / "go0")
    assert follower.wait(timeout=60) == 0
    wait_for(lambda: bytes(seen).endswith(b" 0:0\n") and bytes(seen).count(b"ended") == 2)
    assert bytes(seen).decode() == (f"==> job {first} <==\na\n\n==> job {second} <==\nb\n"
                                    f"job {second} ended COMPLETED, exit code 0:0\n\n==> job {first} <==\nx\n"
                                    f"job {first} ended COMPLETED, exit code 0:0\n")
