"""Batch scripts end to end, as sbatch users write them: `vipu submit job.sh` and `--wrap` through the installed CLI
to a live controller (`--ray off`: each program runs as a local process), and what the program then sees and
writes."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_forks import run_script
from tests.conftest import console_script

ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}


def vipu(server, *args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_script(console_script("vipu"), list(args), env={**server.env(), **(env or {})}, cwd=cwd)


def submit(server, *args: str, cwd: Path, env: dict | None = None) -> list[int]:
    out = vipu(server, "submit", "--json", *args, cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["job_ids"]


def show(server, job: int, cwd: Path) -> dict:
    out = vipu(server, "show", "job", str(job), "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def ended(server, job: int, cwd: Path, timeout: float = 30.0) -> dict:
    """The job once it has ended, polled until a deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        x = show(server, job, cwd)
        if x["state"] in ENDED:
            return x
        time.sleep(0.1)
    raise AssertionError(f"job {job} had not ended after {timeout} s: {x['state']}")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_script_runs_with_its_directives_and_writes_what_it_printed(server, tmp_path):
    write(tmp_path / "job.sh", "#!/bin/bash\n"
          "# directives, as sbatch reads them: before the first command\n"
          "#SBATCH -J hello --ipus=2\n"
          "#SBATCH --time=5\n"
          "#SBATCH -o out-%x-%j-%N.txt\n"
          "\n"
          'echo "hello $1 $2 from job $SLURM_JOB_ID ($SLURM_JOB_NAME) in $(pwd)"\n'
          "echo oops >&2\n"
          "#SBATCH -J ignored --licenses=db\n")  # after a command: ignored, as sbatch does
    # the words after the script are its arguments (after --, as here, where one starts with -)
    [job] = submit(server, "job.sh", "--", "one", "-two", cwd=tmp_path)
    x = ended(server, job, tmp_path)
    assert (x["state"], x["exit_code"], x["name"], x["ipus"], x["time_limit_s"]) == ("COMPLETED", 0, "hello", 2, 300)
    [output] = tmp_path.glob(f"out-hello-{job}-*.txt")  # %N: its first node, ag00 or another
    assert re.fullmatch(rf"out-hello-{job}-ag\d\d\.txt", output.name), output.name
    assert output.read_text() == f"hello one -two from job {job} (hello) in {tmp_path}\noops\n"
    lines = dict(line.split("=", 1) for line in vipu(server, "show", "job", str(job), cwd=tmp_path).stdout.splitlines())
    assert lines["Command"] == "(batch script) one -two" and lines["WorkDir"] == str(tmp_path)
    # the patterns filled in, %N too (walk29: kept as written), as scontrol shows them
    assert lines["StdOut"] == lines["StdErr"] == str(output)


def test_the_words_after_the_script_are_its_own_whatever_they_are(server, tmp_path):
    write(tmp_path / "args.sh", "#!/bin/bash\n#SBATCH -J args --ipus=1\necho \"args: $*\"\n")
    [job] = submit(server, "-H", "args.sh", "input.txt", "-t", "5", "-J", "renamed", cwd=tmp_path)  # as sbatch
    shown = vipu(server, "show", "job", str(job), cwd=tmp_path).stdout
    assert "Command=(batch script) input.txt -t 5 -J renamed\n" in shown and "JobName=args" in shown
    assert "TimeLimit=00:05:00" not in shown
    vipu(server, "cancel", str(job), cwd=tmp_path)


def test_wait_exits_with_the_jobs_exit_code_as_sbatch_w(server, tmp_path):
    write(tmp_path / "three.sh", "#!/bin/sh\n#SBATCH --ipus=1\nexit 3\n")
    out = vipu(server, "submit", "-W", "three.sh", cwd=tmp_path)  # sbatch -W three.sh: its line, then the job's code
    assert (out.returncode, out.stdout) == (3, "Submitted batch job 1\n"), out.stderr
    assert show(server, 1, tmp_path)["state"] == "FAILED"  # ended before the command did
    write(tmp_path / "ok.sh", "#!/bin/sh\n#SBATCH --ipus=1\n#SBATCH -W\ntrue\n")  # a directive asks it too
    out = vipu(server, "submit", "--parsable", "ok.sh", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (0, "2\n") and show(server, 2, tmp_path)["state"] == "COMPLETED"
    refused = vipu(server, "submit", "--deadline", "now+1hour", "ok.sh", cwd=tmp_path)
    assert refused.returncode == 2 and "--deadline is not taken" in refused.stderr, refused.stderr
    # SBATCH_WAIT, as sbatch reads it: over the script's #SBATCH -W (off undoes it), under the command line's -W
    write(tmp_path / "three-w.sh", "#!/bin/sh\n#SBATCH --ipus=1\n#SBATCH -W\nexit 3\n")
    for args, variable, code in ((["three.sh"], "", 3), (["three-w.sh"], "no", 0), (["-W", "three.sh"], "0", 3)):
        out = vipu(server, "submit", "--parsable", *args, cwd=tmp_path, env={"SBATCH_WAIT": variable})
        assert out.returncode == code, (args, variable, out.stderr)


def test_flags_beat_directives(server, tmp_path):
    write(tmp_path / "job.sh", "#!/bin/sh\n#SBATCH -J from-script -t 10 --ipus 4 -q normal --nice=5\n"
          "#SBATCH --hold\ntrue\n")
    [job] = submit(server, "-J", "from-flag", "-t", "2:00", "--nice", "7", "job.sh", cwd=tmp_path)
    spec = show(server, job, tmp_path)["spec"]
    assert (spec["name"], spec["time_limit"], spec["nice"], spec["ipus"], spec["hold"]) == ("from-flag", 120, 7, 4,
                                                                                             True)
    [bare] = submit(server, "--nice", "job.sh", cwd=tmp_path)  # sbatch --nice job.sh: 100, the script no value
    assert show(server, bare, tmp_path)["spec"]["nice"] == 100
    [other] = submit(server, "--no-hold", "--time-limit", "90s", "--name", "n", "job.sh", cwd=tmp_path)
    x = ended(server, other, tmp_path)  # --no-hold beat -H; --time-limit takes a unit
    assert (x["state"], x["time_limit_s"], x["name"]) == ("COMPLETED", 90, "n")

    # sbatch's input variables: over the #SBATCH lines, under the flags (man sbatch)
    env = {"SBATCH_JOB_NAME": "from-env", "SBATCH_TIMELIMIT": "7", "SBATCH_QOS": "high", "SBATCH_NO_REQUEUE": ""}
    [third] = submit(server, "-J", "from-flag", "job.sh", cwd=tmp_path, env=env)
    spec = show(server, third, tmp_path)["spec"]
    assert (spec["name"], spec["time_limit"], spec["qos"], spec["requeue"]) == ("from-flag", 420, "high", False)
    [wrapped] = submit(server, "--wrap", "true", "--ipus", "1", "-H", cwd=tmp_path, env=env)
    assert show(server, wrapped, tmp_path)["spec"]["name"] == "from-env"
    bad = vipu(server, "submit", "job.sh", cwd=tmp_path, env={"SBATCH_TIMELIMIT": "soon"})
    assert bad.returncode == 2 and bad.stderr.startswith("vipu: error: SBATCH_TIMELIMIT: 'soon'"), bad.stderr
    said = vipu(server, "submit", "--comment", "nightly", "--json", "job.sh", cwd=tmp_path)  # sbatch's, kept
    assert said.returncode == 0 and said.stderr == "", said.stderr
    assert show(server, json.loads(said.stdout)["job_ids"][0], tmp_path)["spec"]["comment"] == "nightly"
    [appending] = submit(server, "-H", "job.sh", cwd=tmp_path, env={"SBATCH_OPEN_MODE": "append"})
    assert show(server, appending, tmp_path)["spec"]["workload"]["open_mode"] == "append"
    refused = vipu(server, "submit", "job.sh", cwd=tmp_path, env={"SBATCH_OPEN_MODE": "replace"})
    assert refused.returncode == 2 and "--open-mode=replace: give truncate or append" in refused.stderr


def test_open_mode_append_adds_to_a_file_of_ones_own_and_each_run_adds_again(server, tmp_path):
    """sbatch --open-mode=append: the honest way to reuse one's own output file, which the default (truncate) may not
    write over unless the controller made it for the job."""
    log = write(tmp_path / "log.out", "before\n")
    write(tmp_path / "job.sh", "#!/bin/sh\n#SBATCH --ipus 1 -o log.out\necho run $SLURM_RESTART_COUNT\n")
    [refused] = submit(server, "job.sh", cwd=tmp_path)
    assert ended(server, refused, tmp_path)["state"] == "FAILED" and log.read_text() == "before\n"
    [job] = submit(server, "--open-mode=append", "job.sh", cwd=tmp_path)
    assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    assert log.read_text() == "before\nrun 0\n"
    assert vipu(server, "requeue", str(job), cwd=tmp_path).returncode == 0
    deadline = time.monotonic() + 30
    while show(server, job, tmp_path)["requeue_count"] != 1 or log.read_text().count("run") < 2:
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    assert log.read_text() == "before\nrun 0\nrun 1\n"
    spec = vipu(server, "submit", "--ipus", "1", "--open-mode", "append", cwd=tmp_path)  # no program, no mode
    assert spec.returncode == 2 and "--open-mode is for a batch script" in spec.stderr


@pytest.mark.parametrize(("lines", "said"), [
    (["#SBATCH -J fine", "#SBATCH --licenses=db"],
     "job.sh line 3: #SBATCH --licenses=db: --licenses is not an option vipu-sim takes; remove the line"),
    (["#SBATCH --ipus 1", "", "#SBATCH -t 1:xx"],
     "job.sh line 4: #SBATCH -t 1:xx: '1:xx' is not a Slurm time; use minutes (90), MM:SS, HH:MM:SS"),
])
def test_a_bad_directive_is_refused_naming_its_line(unchanged_server, tmp_path, lines, said):
    write(tmp_path / "job.sh", "\n".join(["#!/bin/sh", *lines, "true"]) + "\n")
    out = vipu(unchanged_server, "submit", "job.sh", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith(f"vipu: error: {said}"), out.stderr
    assert json.loads(vipu(unchanged_server, "queue", "--json", cwd=tmp_path).stdout)["jobs"] == []


def test_a_value_the_controller_refuses_names_the_scripts_line_that_gave_it(server, tmp_path):
    """Two scripts submitted one after the other, the second asking for more IPUs than the Pod has: its refusal
    names that script and line, as a refusal of the CLI's own does; the same value as a flag names the flag."""
    write(tmp_path / "good.sh", "#!/bin/sh\n#SBATCH --ipus 1 -H\ntrue\n")
    write(tmp_path / "bad.sh", "#!/bin/sh\n#SBATCH -J big -H\n#SBATCH --ipus 100000\ntrue\n")
    [good] = submit(server, "good.sh", cwd=tmp_path)
    out = vipu(server, "submit", "bad.sh", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith("vipu: error: bad.sh line 3: #SBATCH --ipus 100000: ipus is 100000 but "), out.stderr
    flag = vipu(server, "submit", "--ipus", "100000", "bad.sh", cwd=tmp_path)  # the flag wins, and is named
    assert flag.returncode == 2 and flag.stderr.startswith("vipu: error: --ipus is 100000 but "), flag.stderr
    write(tmp_path / "gone.sh", "#!/bin/sh\n#SBATCH --ipus 1\n#SBATCH -p nowhere\ntrue\n")
    gone = vipu(server, "submit", "gone.sh", cwd=tmp_path)  # an object the directive named: named once
    assert gone.returncode == 3
    assert gone.stderr.startswith("vipu: error: gone.sh line 3: #SBATCH -p nowhere: allocation 'nowhere' does not"
                                  " exist"), gone.stderr
    assert [x["job_id"] for x in json.loads(vipu(server, "queue", "--json", cwd=tmp_path).stdout)["jobs"]] == [good]
    vipu(server, "cancel", str(good), cwd=tmp_path)


def test_a_file_that_is_no_script_and_no_spec_gets_sbatchs_message(server, tmp_path):
    write(tmp_path / "job.sh", "echo no interpreter line\n")
    out = vipu(server, "submit", "--ipus", "1", "job.sh", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr == ("vipu: error: job.sh: This does not look like a batch script. The first line must start"
                          " with #! followed by the path to an interpreter (e.g. #!/bin/bash), and it is not a YAML or"
                          " JSON job spec either\n")
    write(tmp_path / "none.sh", "#!/bin/sh\ntrue\n")
    asks = vipu(server, "submit", "none.sh", cwd=tmp_path)
    assert asks.returncode == 2 and "none.sh asks for no IPUs; add a line `#SBATCH --ipus=N`" in asks.stderr


def test_wrap_runs_a_command_in_a_sh_script(server, tmp_path):
    [job] = submit(server, "--ipus", "1", "--wrap", "echo wrapped $((1 + 1)) as $SLURM_JOB_NAME", cwd=tmp_path)
    assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text() == "wrapped 2 as wrap\n"
    write(tmp_path / "job.sh", "#!/bin/sh\ntrue\n")
    both = vipu(server, "submit", "--ipus", "1", "--wrap", "true", "job.sh", cwd=tmp_path)
    assert both.returncode == 2 and "--wrap makes the batch script from its command" in both.stderr
    empty = vipu(server, "submit", "--ipus", "1", "--wrap", " ", cwd=tmp_path)
    assert (empty.returncode, empty.stderr) == (2, 'vipu: error: --wrap is empty; give the command to run, e.g.'
                                                   ' --wrap "hostname"\n')
    no_ipus = vipu(server, "submit", "--wrap", "hostname", cwd=tmp_path)
    assert (no_ipus.returncode, no_ipus.stderr) == (2, "vipu: error: --wrap asks for no IPUs; give vipu submit"
                                                       " --ipus N, or -N N for N IPU-Machines\n")


@pytest.mark.parametrize(("export", "want"), [
    (None, "FOO=unset BAR=shell"),  # ALL, the default: the submitting shell's environment
    ("NONE", "FOO=unset BAR=unset"),
    ("ALL,FOO=1", "FOO=1 BAR=shell"),
    ("FOO=2", "FOO=2 BAR=unset"),  # only those named
    ("NONE,FOO=1", "FOO=1 BAR=unset"),  # the same, as sbatch 22.05 takes it
])
def test_export_decides_what_the_program_gets_of_the_shell(server, tmp_path, export, want):
    write(tmp_path / "env.sh", '#!/bin/sh\n#SBATCH --ipus 1\necho "FOO=${FOO-unset} BAR=${BAR-unset}"\n')
    flags = [] if export is None else [f"--export={export}"]
    [job] = submit(server, *flags, "env.sh", cwd=tmp_path, env={"BAR": "shell"})
    assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text() == want + "\n"


def test_chdir_and_a_relative_output_land_where_sbatch_puts_them(server, tmp_path):
    (tmp_path / "run" / "logs").mkdir(parents=True)
    write(tmp_path / "job.sh", '#!/bin/sh\n#SBATCH --ipus 1\necho "in $(pwd), submitted from $SLURM_SUBMIT_DIR"\n')
    [relative] = submit(server, "-D", "run", "-o", "logs/%j.txt", "job.sh", cwd=tmp_path)
    [default] = submit(server, "--chdir", "run", "job.sh", cwd=tmp_path)
    for job in (relative, default):
        assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    said = f"in {tmp_path}/run, submitted from {tmp_path}\n"
    assert (tmp_path / "run" / "logs" / f"{relative}.txt").read_text() == said  # relative to -D, not to here
    assert (tmp_path / "run" / f"slurm-{default}.out").read_text() == said
    assert show(server, relative, tmp_path)["spec"]["output"] == f"{tmp_path}/run/logs/%j.txt"


def test_show_job_script_prints_the_script_byte_for_byte(server, tmp_path):
    text = "#!/bin/bash\n#SBATCH --ipus=1 -H\n# a lone\rreturn\n\tprintf '%s\\n' \"ünïcode $1\"  \n\n# no newline at the end"
    write(tmp_path / "job.sh", text)
    [job] = submit(server, "job.sh", cwd=tmp_path)
    out = subprocess.run([console_script("vipu"), "show", "job", str(job), "--script"], env=server.env(),
                         capture_output=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, text.encode())
    [sleeper] = submit(server, "--ipus", "1", "--hold", cwd=tmp_path)
    none = vipu(server, "show", "job", str(sleeper), "--script", cwd=tmp_path)
    assert none.returncode == 3 and none.stdout == ""
    assert f"job {sleeper} has no batch script: it runs a hold workload" in none.stderr


def test_an_array_script_gives_each_task_its_id_and_file(server, tmp_path):
    write(tmp_path / "sweep.sh", "#!/bin/sh\n#SBATCH --array=0-4:2 --ipus 1 -t 1\n"
          'echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID ($SLURM_ARRAY_TASK_COUNT, step'
          ' $SLURM_ARRAY_TASK_STEP)"\n')  # step: regression (walk28), it was unset
    jobs = submit(server, "sweep.sh", cwd=tmp_path)
    assert len(jobs) == 3
    array = jobs[0]
    for job in jobs:
        assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    for task in (0, 2, 4):
        assert (tmp_path / f"slurm-{array}_{task}.out").read_text() == f"task {task} of {array} (3, step 2)\n"


def test_the_example_script_runs_as_getting_started_says(server, tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "hello.sh"
    [job] = submit(server, str(example), cwd=tmp_path)
    assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    assert (tmp_path / f"hello-{job}.out").read_text() == (
        f"job {job} (hello) holds partition slurm_{job} of 4 IPUs\nin {tmp_path}, submitted from {tmp_path}\n")


def test_an_output_in_a_missing_directory_is_refused_at_submit_or_fails_the_job_saying_why(server, tmp_path):
    write(tmp_path / "job.sh", "#!/bin/sh\n#SBATCH --ipus 1 -o nowhere/%j.out\necho lost\n")
    out = vipu(server, "submit", "job.sh", cwd=tmp_path)  # the submit knows the folder: no run could write there
    assert out.returncode == 2 and out.stderr == (
        f"vipu: error: job.sh line 2: #SBATCH --ipus 1 -o nowhere/%j.out: output file {tmp_path}/nowhere/%j.out: its"
        f" directory {tmp_path}/nowhere does not exist; create it, or give a path in an existing directory (as"
        " sbatch, vipu never makes it)\n")
    out = vipu(server, "submit", "--ipus", "1", "--wrap", "true", "-D", "gone", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr == (
        f"vipu: error: -D/--chdir {tmp_path}/gone does not exist; create it, or give a working directory that"
        " exists\n")
    # a folder gone between the submit and the start: the start fails the job, as sbatch's
    (tmp_path / "nowhere").mkdir()
    [first] = submit(server, "--ipus", "1", "--wrap", "true", "-H", cwd=tmp_path)
    [job] = submit(server, "-d", f"afterany:{first}", "job.sh", cwd=tmp_path)
    (tmp_path / "nowhere").rmdir()
    assert vipu(server, "cancel", str(first), cwd=tmp_path).returncode == 0
    assert ended(server, job, tmp_path)["state"] == "FAILED"
    assert not (tmp_path / "nowhere").exists()  # as sbatch: the job fails rather than create it
    text = vipu(server, "show", "job", str(job), cwd=tmp_path).stdout
    assert f"EndedBy=output file {tmp_path}/nowhere/{job}.out: its directory {tmp_path}/nowhere does not exist" in text
