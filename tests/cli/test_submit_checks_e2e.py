"""`vipu submit --test-only` (sbatch's), and submits Slurm refuses or fails that vipu let through: an empty --qos, a
missing --output directory, malformed YAML without a position; and `vipu-admin create agent` on a full Pod."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess

from tests.cli.test_cli_e2e import run
from tests.conftest import console_script
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for

# sbatch's: "Job N to start at T using P processors on nodes L in partition P" (src/api/allocate.c), the partition
# being the allocation; the job's own V-IPU partition after it
LINE = re.compile(r"Job (\d+) to start at (\S+) using (\d+) IPUs? on nodes (\S+) in partition (\S+)"
                  r" \(V-IPU partition (\S+)\)")


def test_test_only_prints_the_expected_start_and_queues_nothing(server):
    out = run(server, "vipu", "submit", "--ipus", "16", "--time", "5", "--test-only")
    assert out.returncode == 0, out.stderr
    assert LINE.fullmatch(out.stdout.strip()).group(1, 3, 4, 5, 6) == ("1", "16", "ag[00-03]", "default", "slurm_1")
    assert jobs(server) == {} and json.loads(run(server, "vipu", "history", "--json").stdout) == []
    out = run(server, "vipu", "submit", "--ipus", "16", "--time", "5", "--test-only", "--json")
    assert json.loads(out.stdout)["reason"] == "None"  # startable: the queue's word for no reason, not ""
    [big] = submit(server, "--ipus", "64", "--time", "10")  # the id the test named: nothing was used up
    assert big == 1
    start = wait_for(lambda: (x := show(server, big))["state"] == "RUNNING" and x["start_time"])
    out = run(server, "vipu", "submit", "--ipus", "16", "--time", "5", "--test-only", "--json")
    tested = json.loads(out.stdout)
    assert (tested["job_id"], tested["reason"], tested["queued"]) == (2, "Resources", False)
    assert (tested["nodes"], tested["first_ipu"]) == ("ag[00-03]", 0)  # the block it is reserved once job 1 ends
    # typed as every --json's time (RFC 3339; walk22c), the deprecated epoch double beside it as a job's --json has
    at = datetime.datetime.fromisoformat(tested["start_time"].replace("Z", "+00:00")).timestamp()
    assert abs(at - (start + 600)) < 1 and abs(tested["start"] - at) < 1e-3  # when the running job's limit ends
    out = run(server, "vipu", "submit", "--ipus", "1", "--test-only", "--json", "-b", "now+1hour")
    assert json.loads(out.stdout)["reason"] == "BeginTime"  # as the queue says, not Resources (walk22d defect 10)
    out = run(server, "vipu", "submit", "--ipus", "16", "--hold", "--test-only")
    assert out.stdout.startswith("Job 2 to start at Unknown using 16 IPUs in partition default (V-IPU partition"
                                 " slurm_2): it would be held")  # no start, no nodes
    out = run(server, "vipu", "submit", "--ipus", "16", "--qos", "gold", "--test-only")  # refused as a submit is
    assert out.returncode == 2 and "--qos 'gold' is unknown" in out.stderr
    assert list(jobs(server)) == [big]


def test_an_empty_qos_is_refused_naming_the_flag(server):
    """Regression: `vipu submit --qos ""` was accepted and ran as normal, while an empty --user or --name is refused."""
    out = run(server, "vipu", "submit", "--ipus", "1", "--qos", "")
    assert out.returncode == 2 and out.stderr == ("vipu: error: -q/--qos is empty; give one of high, low, normal,"
                                                  " or leave it out for the default, normal\n")
    assert jobs(server) == {}


def test_a_flag_the_controller_refuses_is_named_with_the_field(server):
    """Regression: `vipu submit -J 'a b'`, `-a 5-1`, `-d x`, `-b 10m` named the spec field but not the flag typed (the
    controller speaks the API's field names; the CLI adds its flag)."""
    for flag, value, said in (("-J", "a\tb", "-J/--job-name 'a\\tb' contains the control character '\\t'"),
                              ("-a", "5-1", "-a/--array: '5-1': range 5-1 runs backwards"),
                              ("-d", "whenever", "-d/--dependency: 'whenever': unknown"),
                              ("-b", "10m", "-b/--begin: '10m' is ambiguous"),
                              ("--time-limit", "90", "--time-limit: '90' has no unit"),
                              ("--duration", "5", "--duration: '5' has no unit")):
        out = run(server, "vipu", "submit", "--ipus", "1", flag, value)
        assert out.returncode == 2 and said in out.stderr and out.stderr.count("\n") == 1, out.stderr
    # the flag at fault leads the line, not the spec's label: "invalid --wrap: array (-a/--array)" blamed --wrap
    for label in ([], ["--wrap", "true"]):
        out = run(server, "vipu", "submit", "--ipus", "1", *label, "-a", "x")
        assert out.returncode == 2 and out.stderr.startswith("vipu: error: -a/--array: 'x'"), out.stderr
        assert "--wrap" not in out.stderr and "invalid" not in out.stderr
    # an object the flag names that does not exist: the flag leads the line (walk of issue 22)
    out = run(server, "vipu", "submit", "--wrap", "true", "--ipus", "1", "-p", "nope")
    assert out.returncode == 3 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("vipu: error: -p/--partition: allocation 'nope' does not exist; ")
    assert jobs(server) == {}


def test_malformed_yaml_is_reported_with_its_line_and_column(server, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("ipus: 4\ntime_limit: 10m\n  name: x\n")
    out = run(server, "vipu", "submit", str(spec))
    assert out.returncode == 2, out.stderr
    assert "not valid YAML/JSON (line 3, column 7: mapping values are not allowed here)" in out.stderr
    spec.write_text("ipus: 4\nname: [x\n")
    out = run(server, "vipu", "submit", str(spec))
    assert "(while parsing a flow sequence from line 2, column 7)" in out.stderr


def test_an_output_directory_that_does_not_exist_is_refused_or_fails_the_job_as_sbatch_does(server, tmp_path):
    """Regression: a built-in workload's --output into a missing directory made the directory; Slurm fails the
    job (a program's run already failed so). Missing at the submit, it is refused then; removed after it, a held
    job's release is refused (it stays held, as a batch script's does, until the folder is back), and a job that
    starts fails at its start."""
    missing = tmp_path / "nowhere"
    out = run(server, "vipu", "submit", "--ipus", "1", "--time", "5", "--duration", "1s", "-o", str(missing / "%j.out"))
    assert out.returncode == 2 and out.stderr == (
        f"vipu: error: -o/--output file {missing}/%j.out: its directory {missing} does not exist; create it, or give"
        " a path in an existing directory (as sbatch, vipu never makes it)\n")
    # the same from sbatch's variable: the refusal names the variable that gave it
    out = run(server, "vipu", "submit", "--ipus", "1", "--duration", "1s",
              env={**server.env(), "SBATCH_OUTPUT": str(missing / "%j.out")})
    assert out.returncode == 2 and out.stderr.startswith(f"vipu: error: SBATCH_OUTPUT file {missing}/%j.out: its")
    missing.mkdir()
    [held] = submit(server, "--ipus", "1", "--time", "5", "--duration", "1s", "-o", str(missing / "%j.out"), "-H")
    [first] = submit(server, "--ipus", "1", "--duration", "1s", "-H")
    [job] = submit(server, "--ipus", "1", "--time", "5", "--duration", "1s", "-o", str(missing / "%j.out"), "-d",
                   f"afterany:{first}")
    missing.rmdir()
    refused = run(server, "vipu", "release", str(held))
    assert (refused.returncode, refused.stderr) == (4, f"vipu: error: job {held} stays held: output file"
                                                       f" {missing}/{held}.out: its directory {missing} does not exist;"
                                                       " create it, or give --output a path in an existing directory"
                                                       " (as sbatch, vipu never makes it); then `vipu"
                                                       f" release {held}`\n")
    assert show(server, held)["held"]
    assert run(server, "vipu", "release", str(first)).returncode == 0  # job starts once it ends: and fails then
    ended = wait_for(lambda: (x := show(server, job))["state"] not in ("PENDING", "RUNNING") and x)
    assert ended["state"] == "FAILED" and not missing.exists()
    why = f"EndedBy=output file {missing}/{job}.out: its directory {missing} does not exist"
    assert why in run(server, "vipu", "show", "job", str(job)).stdout
    missing.mkdir()  # mended: the held job is released and runs
    assert run(server, "vipu", "release", str(held)).returncode == 0
    assert wait_for(lambda: (x := show(server, held))["state"] == "COMPLETED" and x)
    assert (missing / f"{held}.out").exists()


def test_an_agent_for_a_pod_whose_machines_all_have_one_is_a_conflict(server):
    """Regression: it exited 7 (no capacity), where the agents in the way make it a conflict (4)."""
    out = run(server, "vipu-admin", "create", "agent", "extra")
    assert out.returncode == 4 and "every one of the 16 machines of bow-pod64 has an agent" in out.stderr


def test_the_clis_own_refusals_shorten_a_huge_echoed_value(server):
    """Regression: the CLI's own refusals echoed a 20,000-character value whole (the controller's were shortened)."""
    huge = "x" * 20000
    for args in (["queue", "-S", "z" * 20000],  # (x is a field, EXC_NODES; z is none) ["show", "job", huge], ["submit", "--ipus", "1", "--time-limit", huge],
                 ["history", "-S", huge]):
        out = run(server, "vipu", *args)
        assert out.returncode == 2 and len(out.stderr) < 700 and "characters)" in out.stderr, (args, out.stderr[:300])


def test_an_empty_output_or_user_flag_is_refused_naming_it(server, tmp_path):
    """Regression: `vipu submit -o ''` wrote the job's output to the submit directory's path, and `-u ''` listed or
    cancelled as if no -u was given."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    for args, flag in ((["submit", "-o", "", "--ipus", "1", "--hold"], "-o/--output"),
                       (["submit", "-e", " ", "--ipus", "1", "--hold"], "-e/--error"),
                       (["submit", "-o", "", str(script)], "-o/--output"),
                       (["queue", "-u", ""], "-u/--user"), (["queue", "--user=,"], "-u/--user"),
                       (["cancel", "-u", ""], "-u/--user"), (["history", "-u", ""], "-u/--user"),
                       (["priority", "-u", ""], "-u/--user")):
        out = run(server, "vipu", *args)
        assert out.returncode == 2 and out.stderr.startswith(f"vipu: error: {flag} is empty: give "), (args, out.stderr)
    stderr_file = run(server, "vipu", "submit", "--ipus", "1", "--duration", "1s", "-e", str(tmp_path / "e.txt"))
    assert stderr_file.returncode == 2 and stderr_file.stderr.startswith(  # regression: "vipu: error: error: a ..."
        "vipu: error: a sleep workload writes no stderr, so it takes no error file"), stderr_file.stderr
    assert jobs(server) == {}  # nothing was queued


def piped(server, *args: str, script: str, cwd) -> subprocess.CompletedProcess:
    """`vipu submit ARGS` with `script` on a pipe, as `cat job.sh | vipu submit ARGS` runs it."""
    return subprocess.run([console_script("vipu"), "submit", *args], input=script, capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=server.env() if server else None)


def test_a_script_piped_without_a_dash_is_read_from_stdin_as_sbatch_reads_it(server, tmp_path):
    """walk36: `cat job.sh | vipu submit` was refused (add '-'); sbatch reads stdin when no script is named."""
    script = "#!/bin/sh\n#SBATCH --ipus 1 -t 5\necho piped\n"
    out = piped(server, script=script, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    [job] = [int(w) for w in out.stdout.split() if w.isdigit()]
    assert show(server, job)["name"] == "sbatch"  # sbatch's name for a script from stdin
    assert run(server, "vipu", "show", "job", str(job), "--script").stdout == script
    sized = piped(server, "--ipus", "4", "--json", script=script, cwd=tmp_path)  # flags over its directives
    [other] = json.loads(sized.stdout)["job_ids"]
    assert show(server, other)["ipus"] == 4
    # nothing piped: the flags alone make the job, as before; with none, the refusal says stdin had no script
    [held] = json.loads(piped(server, "--ipus", "1", "--json", script="", cwd=tmp_path).stdout)["job_ids"]
    assert show(server, held)["name"] != "sbatch"
    empty = piped(server, script="", cwd=tmp_path)
    assert empty.returncode == 2 and empty.stderr.endswith("; stdin had none (vipu submit < job.sh reads one)\n")
    # --duration makes the workload, so stdin is not read: a spec-less sleep job
    [slept] = json.loads(piped(server, "--ipus", "1", "--duration", "1s", "--json", script=script,
                               cwd=tmp_path).stdout)["job_ids"]
    assert show(server, slept)["name"] != "sbatch"


def test_a_bare_submit_on_a_terminal_is_refused_saying_how_to_give_a_script(tmp_path):
    """sbatch waits for a script typed on the terminal; vipu submit never waits, it says how."""
    import pty

    main, terminal = pty.openpty()
    try:
        out = subprocess.run([console_script("vipu"), "submit"], stdin=terminal, capture_output=True, text=True,
                             timeout=60, cwd=tmp_path)
    finally:
        os.close(main)
        os.close(terminal)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.endswith("; pipe one in (vipu submit < job.sh), or give '-' to type it (Ctrl-D ends it)\n")
