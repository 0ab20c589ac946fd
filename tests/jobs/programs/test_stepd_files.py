"""A program's output file as its supervisor opens it (stepd.open_output): without --secure, as the controller's own
user, never through a symlink and never over a file that appeared after the controller's check."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path

import pytest

from vipu.jobs.programs.stepd import StartError, open_output, said_stopped, start


def test_a_file_that_appeared_after_the_check_is_not_written_over(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("someone's\n")  # made between the controller's check and the open
    with pytest.raises(StartError, match=f"output file {path} appeared as the run started .* remove it, or give"
                                         " --output a new file"):
        open_output(str(path), "output", [str(path)])
    assert path.read_text() == "someone's\n"


def test_a_symlink_is_not_followed_even_to_a_file_of_the_jobs_earlier_run(tmp_path):
    target, link = tmp_path / "target", tmp_path / "out.txt"
    target.write_text("keep\n")
    link.symlink_to(target)
    with pytest.raises(StartError, match="appeared as the run started"):
        open_output(str(link), "output", [])  # not fresh: its earlier run made out.txt, since swapped for a link
    assert target.read_text() == "keep\n"


def test_under_secure_the_users_account_decides(tmp_path):
    target, link = tmp_path / "target", tmp_path / "out.txt"
    link.symlink_to(target)
    os.close(open_output(str(link), "error", None))  # its own link, its own permissions
    assert target.exists()


def test_vipu_logs_reads_no_symlink_hard_link_or_fifo(tmp_path):
    """Regression: `vipu logs` read a job's output file as the controller's user through whatever the job's user
    had put there, so a symlink to a file only root may read showed that file."""
    from vipu.jobs.programs.hosts import Steps

    secret = tmp_path / "secret"
    secret.write_text("TOPSECRET\n")
    out = tmp_path / "slurm-1.out"
    out.write_text("hi\n")
    assert Steps.tail(str(out)) == ("hi\n", False)
    assert Steps.tail(str(tmp_path / "none")) == ("", False)
    (tmp_path / "link.out").symlink_to(secret)
    os.link(secret, tmp_path / "hard.out")
    os.mkfifo(tmp_path / "fifo.out")
    for name in ("link.out", "hard.out", "fifo.out"):
        text, cut = Steps.tail(str(tmp_path / name))
        assert text.startswith(f"(the output file {tmp_path / name} is not shown: ") and "TOPSECRET" not in text


@pytest.mark.skipif(os.geteuid() != 0, reason="reading as another account needs root, as --secure does")
def test_under_secure_vipu_logs_reads_as_the_jobs_user_through_any_folder_swapped_in(tmp_path):
    """Regression: under --secure, a job's user replaced a folder of its output path by a symlink to a folder only
    root may enter, and `vipu logs` (the controller's user) showed root's file of that name."""
    import shutil
    import tempfile

    from vipu.jobs.programs.hosts import Steps

    nobody = {"uid": 65534, "gid": 65534, "groups": []}
    private = tmp_path / "private"  # pytest's folders are root's alone
    private.mkdir(mode=0o700)
    (private / "out.txt").write_text("TOPSECRET\n")
    home = Path(tempfile.mkdtemp(prefix="vipu-nobody-"))
    try:
        home.chmod(0o777)
        (home / "sub").mkdir()
        (home / "sub" / "out.txt").write_text("mine\n")
        assert Steps.tail(str(home / "sub" / "out.txt"), user=nobody) == ("mine\n", False)
        assert Steps.tail(str(home / "sub" / "none"), user=nobody) == ("", False)
        shutil.rmtree(home / "sub")
        (home / "sub").symlink_to(private)  # after the run: the user's own folder, swapped
        text, cut = Steps.tail(str(home / "sub" / "out.txt"), user=nobody)
        assert "TOPSECRET" not in text and text == f"(the output file {home / 'sub' / 'out.txt'} is not shown:" \
            " permission denied)", text
        assert "TOPSECRET" in Steps.tail(str(home / "sub" / "out.txt"))[0]  # what the controller's user would read
    finally:
        shutil.rmtree(home)


def test_vipu_logs_f_reads_whole_lines_from_its_offset_and_starts_at_the_last_mib(tmp_path):
    from vipu.jobs.programs.hosts import Steps

    out = tmp_path / "out"
    out.write_bytes(b"one\ntw")
    assert Steps.read_after(str(out), 0) == (["one"], 4, "")  # half a line waits for its end
    assert Steps.read_after(str(out), 4, whole=False) == (["tw"], 6, "")  # the run has ended: nothing more comes
    with out.open("ab") as f:
        f.write(b"o\nthree\n")
    assert Steps.read_after(str(out), 4) == (["two", "three"], 14, "")
    assert Steps.read_after(str(out), 14) == ([], 14, "")
    out.write_bytes(b"new\n")  # cut shorter than what was read: from its start again, said
    assert Steps.read_after(str(out), 14) == ([f"({out} was truncated: read from its start again)", "new"], 4, "")
    out.write_bytes(b"x" * 10 + b"\nlast\n")  # a first read: from the first whole line of the last max_bytes
    assert Steps.read_after(str(out), None, max_bytes=8) == ([f"(only the end of {out} is shown)", "last"], 16, "")
    assert Steps.read_after(str(out), 0, max_bytes=4) == (["xxxx"], 4, "")  # a line longer than a read: cut
    assert Steps.read_after(str(tmp_path / "none"), 0) == ([], 0, "")  # not yet made
    os.mkfifo(tmp_path / "fifo")
    assert Steps.read_after(str(tmp_path / "fifo"), 0)[2] == (f"(the output file {tmp_path / 'fifo'} is not shown:"
                                                             " not a regular file with one name)")


def test_a_partial_read_gives_the_text_as_far_as_it_has_come_to_its_last_whole_character(tmp_path):
    """`vipu logs -f` in text: a line not ended yet is shown as tail -f shows it; a carriage return stays in its line
    (a progress bar); a character whose bytes the read's end cut waits for the rest while the program goes on."""
    from vipu.jobs.programs.hosts import Steps

    out = tmp_path / "out"
    out.write_bytes(b"one\n10%\r20%\r\xc3")  # the first byte of "\xe9" (e acute) in UTF-8
    assert Steps.read_after(str(out), 0, partial=True) == (["one", "10%\r20%\r"], 12, "")
    assert Steps.read_after(str(out), 12, partial=True) == ([], 12, "")  # half a character: nothing yet
    assert Steps.read_after(str(out), 12, whole=False, partial=True) == (["\ufffd"], 13, "")  # nothing more comes
    with out.open("ab") as f:
        f.write(b"\xa9\n")
    assert Steps.read_after(str(out), 12, partial=True) == (["\xe9", ""], 15, "")  # "": the text ends a line
    assert Steps.read_after(str(out), 15, partial=True) == ([], 15, "")
    out.write_bytes(b"a\r\nb\rc\n\n")  # whole lines too: cut at newlines only, as cat shows them
    assert Steps.read_after(str(out), 0) == (["a\r", "b\rc", ""], 8, "")


def test_a_partial_read_of_a_file_cut_to_nothing_leaves_no_line_of_its_own_open(tmp_path):
    """Regression: a file truncated to nothing read partially gave only the line saying so, taken as the text's open
    line: the program's next text was shown after it on the same line."""
    from vipu.jobs.programs.hosts import Steps

    out = tmp_path / "out"
    out.write_bytes(b"")
    assert Steps.read_after(str(out), 9, partial=True) == ([f"({out} was truncated: read from its start again)", ""],
                                                           0, "")
    out.write_bytes(b"x" * 10 + b"\n")  # a first read whose last MiB holds no line after the cut one
    assert Steps.read_after(str(out), None, max_bytes=4, partial=True) == ([f"(only the end of {out} is shown)", ""],
                                                                           11, "")


def test_a_partial_read_cut_at_max_bytes_keeps_a_character_whole_after_the_program_ended(tmp_path):
    """Regression: once the program had ended, a read that stopped at max_bytes in a character's middle gave its
    first bytes as U+FFFD, and the next read its last ones: the character was never shown."""
    from vipu.jobs.programs.hosts import Steps

    out = tmp_path / "out"
    out.write_bytes("ab\xe9\n".encode())
    assert Steps.read_after(str(out), 0, max_bytes=3, whole=False, partial=True) == (["ab"], 2, "")
    assert Steps.read_after(str(out), 2, max_bytes=3, whole=False, partial=True) == (["\xe9", ""], 5, "")


def test_a_read_cut_at_max_bytes_after_the_program_ended_stops_at_its_last_whole_line(tmp_path):
    """Regression: a follower more than max_bytes behind a program that had ended got the line the read's end cut
    as two lines (--json: two objects), and a character cut there as two U+FFFD."""
    from vipu.jobs.programs.hosts import Steps

    out = tmp_path / "out"
    out.write_bytes("aaa\nb\xe9b\ncc".encode())
    assert Steps.read_after(str(out), 0, max_bytes=6, whole=False) == (["aaa"], 4, "")
    assert Steps.read_after(str(out), 4, max_bytes=6, whole=False) == (["b\xe9b"], 9, "")
    assert Steps.read_after(str(out), 9, max_bytes=6, whole=False) == (["cc"], 11, "")  # the end: its last line too


NOBODY = {"uid": 65534, "gid": 65534, "groups": []}


@pytest.mark.skipif(os.geteuid() != 0, reason="becomes another account: needs root")
def test_slurmstepds_line_is_written_as_the_jobs_user():
    """Regression: the CANCELLED line was appended as the supervisor's user (root under --secure) by path, so a job's
    user who swapped a folder of its error path for a symlink had a line appended to a file only root may write."""
    home = Path(tempfile.mkdtemp(prefix="vipu-nobody-"))  # pytest's own folders are root's alone
    home.chmod(0o755)
    theirs, root_only = home / "theirs", home / "root-only"
    theirs.mkdir()
    root_only.mkdir(mode=0o755)
    os.chown(theirs, NOBODY["uid"], NOBODY["gid"])
    kept = root_only / "err.txt"
    kept.write_text("root's\n")
    said = theirs / "err.txt"
    said.write_text("")
    os.chown(said, NOBODY["uid"], NOBODY["gid"])
    launch = {"job_id": 7, "user": NOBODY, "env": {"SLURM_JOB_NODELIST": "ag00"}}
    said_stopped({**launch, "stderr": str(kept)}, "CANCELLED")
    assert kept.read_text() == "root's\n"
    said_stopped({**launch, "stderr": str(said)}, "TIMEOUT")
    assert said.read_text().startswith("slurmstepd-ag00: error: *** JOB 7 ON ag00 CANCELLED AT ")
    assert said.read_text().endswith(" DUE TO TIME LIMIT ***\n")
    shutil.rmtree(home)


@pytest.mark.parametrize(("ending", "words"), [
    ("CANCELLED", ""),
    ("TIMEOUT", " DUE TO TIME LIMIT"),
    ("PREEMPTED", " DUE TO PREEMPTION"),
    ("NODE_FAIL", " DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS"),
    ("REQUEUED", " DUE TO JOB REQUEUE"),
    ("COMPLETED", None),  # its own end: slurmstepd writes no line
])
def test_slurmstepds_line_says_what_stopped_the_job_in_slurms_words(tmp_path, ending, words):
    """Slurm 22.05's slurmstepd (req.c _handle_signal_container), by the signal slurmd passed it for the stop."""
    err = tmp_path / "err.txt"
    err.write_text("the program's\n")
    launch = {"job_id": 7, "stderr": str(err), "env": {"SLURM_JOB_NODELIST": "ag[02-03]"}}
    said_stopped(launch, ending)
    said_stopped(launch, ending)  # once a run
    first, *rest = err.read_text().splitlines()
    assert first == "the program's"
    if words is None:
        assert rest == []
        return
    [line] = rest
    head, _, at = line.partition(" CANCELLED AT ")
    assert head == "slurmstepd-ag02: error: *** JOB 7 ON ag02" and at.endswith(f"{words} ***")
    assert len(at) == len("2026-11-29T12:53:34") + len(words) + 4  # the time, slurm_make_time_str's form


def test_a_fifo_put_in_place_of_the_output_file_does_not_keep_the_job_from_ending(tmp_path):
    """Regression (walk44): a job's user swapped its running job's output file for a FIFO nobody read; the CANCELLED
    line's open waited on it for ever, before the SIGTERM, so the program ran on past the cancel and the time limit
    and kept its IPUs."""
    from vipu.jobs.programs.hosts import Steps

    out, ready = tmp_path / "out", tmp_path / "ready"
    launch = {"job_id": 1, "run": 1, "script": f"#!/bin/bash\ntouch {ready}\nwhile true; do sleep 0.1; done\n",
              "args": [], "cwd": str(tmp_path), "env": {"PATH": os.environ["PATH"]}, "stdout": str(out),
              "stderr": None, "user": None, "kill_wait_s": 2, "spool": str(tmp_path / "spool")}
    steps = Steps()
    steps.start("fifo", launch)
    while not ready.exists():
        assert steps.wait("fifo", timeout=0.05) is None
    out.unlink()
    os.mkfifo(out)
    steps.terminate("fifo", "CANCELLED")
    try:
        assert steps.wait("fifo", timeout=60) == {"ended": {"exit_code": 0, "signal": 15}}
    finally:  # without the fix: a reader lets the supervisor go on, so the test leaves nothing running
        os.close(os.open(out, os.O_RDONLY | os.O_NONBLOCK))


def test_an_output_fifo_nobody_reads_is_refused_at_the_start_and_gets_no_line(tmp_path):
    """The program's own open of a FIFO nobody reads would wait for ever, and the supervisor with it (walk44)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(StartError, match=f"output file {fifo} is a FIFO that nobody reads, .* start its reader first,"
                                         " or give --output a file"):
        open_output(str(fifo), "output", None)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.close(open_output(str(fifo), "output", None))  # one that is read is the user's to give
        said_stopped({"job_id": 7, "user": None, "env": {}, "stdout": str(fifo)}, "CANCELLED")
        assert os.read(reader, 100) == b""  # slurmstepd's line goes into a regular file only
    finally:
        os.close(reader)


def test_an_output_path_that_is_a_socket_is_not_called_a_fifo():
    """open() of a Unix socket fails ENXIO too, as a FIFO nobody reads does: no reader to start there."""
    folder = tempfile.mkdtemp(dir="/tmp")  # a socket's path must fit in 107 characters
    path = os.path.join(folder, "out.sock")
    try:
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind(path)
            with pytest.raises(StartError) as refused:
                open_output(path, "output", None)
        assert str(refused.value) == f"output file {path} is a socket or a device file that cannot be opened; give" \
                                     " --output a file"
    finally:
        shutil.rmtree(folder)


def test_what_the_program_prints_after_slurmstepds_line_follows_it(tmp_path):
    """Regression (walk44): the program's file was opened O_TRUNC alone, so what a TERM trap printed went to the
    program's own offset, over the CANCELLED line appended just before: `* JOB 11 ON ag00 CANCELLED AT ...`."""
    path = tmp_path / "slurm-11.out"
    path.write_text("an earlier run's longer text\n" * 4)  # truncated all the same
    fd = open_output(str(path), "output", None)
    try:
        os.write(fd, b"start\n")
        said_stopped({"job_id": 11, "user": None, "env": {"SLURM_JOB_NODELIST": "ag00"}, "stdout": str(path)},
                     "CANCELLED")
        os.write(fd, b"Terminated\ngot TERM at 13\n")
    finally:
        os.close(fd)
    lines = path.read_text().splitlines()
    assert lines[0] == "start" and lines[2:] == ["Terminated", "got TERM at 13"], lines
    assert lines[1].startswith("slurmstepd-ag00: error: *** JOB 11 ON ag00 CANCELLED AT ") and lines[1].endswith("***")


@pytest.mark.skipif(os.geteuid() != 0, reason="becomes another account: needs root")
def test_an_output_folder_the_user_may_not_reach_is_not_said_to_be_missing(tmp_path):
    """walk44: `-o /home/alice/project/x.out` of another user's job said "does not exist; create it" of a folder
    that exists; whether it does is not that user's to know, and creating it is not the fix."""
    private = tmp_path / "private"  # pytest's folders are root's alone
    (private / "project").mkdir(parents=True)
    private.chmod(0o700)
    said = {}
    for name in ("project", "none"):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: becomes nobody, as the supervisor becomes the job's user
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                open_output(str(private / name / "x.out"), "output", None)
                os.write(write, b"opened")
            except StartError as e:
                os.write(write, str(e).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            said[name] = f.read()
        os.waitpid(pid, 0)
    for name in ("project", "none"):  # the same words for both
        assert said[name] == (f"output file {private / name / 'x.out'}: its directory {private / name} cannot be"
                              " reached (permission denied); give --output a path in a directory the job's user may"
                              " write in"), said


@pytest.mark.skipif(os.geteuid() != 0, reason="becomes another account: needs root")
def test_an_open_as_the_jobs_user_that_does_not_answer_fails_and_leaves_no_child():
    """walk44: the child that opens a job's file as its user runs as that user, who may stop it (kill -STOP -1) or
    give a file whose open waits; the caller (an RPC thread for `vipu logs`, a supervisor stopping its job) waited
    for it for ever. Here an open that waits: a FIFO nobody reads, opened without O_NONBLOCK."""
    import errno
    import time

    from vipu.jobs.programs.user_files import open_as

    home = Path(tempfile.mkdtemp(prefix="vipu-nobody-"))  # pytest's own folders are root's alone
    try:
        home.chmod(0o755)
        fifo = home / "fifo"
        os.mkfifo(fifo)
        fifo.chmod(0o666)  # (mkfifo heeds the umask)
        started = time.monotonic()
        with pytest.raises(OSError) as refused:
            open_as(str(fifo), NOBODY, os.O_WRONLY, answer_s=1.0)
        assert refused.value.errno == errno.ETIMEDOUT and time.monotonic() - started < 30
        assert refused.value.strerror == "the open as its user did not answer in 1 s"  # not "Connection timed out"
        assert not [p for p in os.listdir("/proc") if p.isdigit() and ours_as_nobody(int(p))]  # killed, reaped
    finally:
        shutil.rmtree(home)


def ours_as_nobody(pid: int) -> bool:
    """Whether `pid` is a child of this process (a zombie too) running as nobody."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return False
    return int(fields["PPid"]) == os.getpid() and int(fields["Uid"].split()[0]) == NOBODY["uid"]


def test_a_program_stopped_before_its_exec_is_killed_and_its_start_fails(tmp_path, monkeypatch):
    """Regression (rev42c): the job's user stopped the supervisor's child between its setuid and its exec (kill -STOP
    -1); the supervisor read its pipe for ever, so neither a cancel nor the time limit could end the job."""
    from vipu.jobs.programs import stepd

    monkeypatch.setattr(stepd, "become", lambda launch, script: os.kill(os.getpid(), signal.SIGSTOP))
    monkeypatch.setattr(stepd, "until_exec", functools.partial(stepd.until_exec, wait_s=0.5))
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n")
    forked = forks(monkeypatch)
    with pytest.raises(StartError, match=r"stopped before its exec and was killed after 60 s \(a kill -STOP"):
        stepd.start({}, script)
    assert not script.exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)  # killed and reaped: nothing left behind, stopped or not


def test_a_program_that_cannot_start_says_why_and_is_reaped(tmp_path, monkeypatch):
    script = tmp_path / "job.sh"
    script.write_text("#!/nonexistent/shell\n")
    script.chmod(0o755)
    launch = {"cwd": str(tmp_path), "stdout": str(tmp_path / "out"), "env": {"PATH": os.environ["PATH"]}}
    forked = forks(monkeypatch)
    with pytest.raises(StartError, match="its interpreter /nonexistent/shell .* does not exist on"):
        start(launch, script)
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)


def forks(monkeypatch) -> list[int]:
    """The pids this process forks from now on."""
    forked, fork = [], os.fork

    def recorded() -> int:
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded)
    return forked
