"""Job id arguments (N and N_T, nothing else), several ids at once, whole-array messages, comma lists, exit codes,
`vipu info --json`, and `vipu simulate`'s errors, --json and trace formats."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from vipu.errors import InvalidArgument
from vipu.replay.run import replay
from vipu.replay.simulation import main_replay
from vipu.replay.traces import NATIVE_COLUMNS, load_trace

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for
from tests.scheduler.builders import POD16

ROOT = Path(__file__).resolve().parents[2]
HELD = ("--ipus", "1", "--time-limit", "1m", "--hold")


def one_error(out, prog: str = "vipu") -> str:
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), out.stderr
    return lines[0]


def test_n_t_names_one_array_task_and_every_other_form_is_refused(server):
    [single] = submit(server, *HELD)
    tasks = submit(server, *HELD, "--array", "0-20")
    assert (single, tasks[0]) == (1, 2)  # int() read 2_1 as job 21, which is task 2_19

    out = run(server, "vipu", "show", "job", "2_1")
    assert out.returncode == 0 and "JobId=2_1\nArrayJobId=2\nArrayTaskId=1\n" in out.stdout
    assert json.loads(run(server, "vipu", "show", "job", "2_1", "--json").stdout)["id"] == tasks[1]
    out = run(server, "vipu", "release", "2_3")
    assert out.returncode == 0 and out.stdout == "Job 2_3 released: PENDING\n"
    assert [show(server, t)["held"] for t in tasks[2:5]] == [True, False, True]
    out = run(server, "vipu", "cancel", "2_4")
    assert out.returncode == 0 and out.stdout == "Job 2_4 cancelled: CANCELLED\n"
    assert "JobState=CANCELLED" in run(server, "vipu", "show", "job", "2_4").stdout  # an ended task is found too

    # the array's id shows every task, as scontrol show job does: active and ended ones, a block each
    whole = run(server, "vipu", "show", "job", "2")
    assert whole.returncode == 0 and whole.stdout.count("\nArrayJobId=2\n") == 21
    assert [b.split("\n")[0] for b in whole.stdout.split("\n\n")] == [f"JobId=2_{t}" for t in range(21)]
    as_json = json.loads(run(server, "vipu", "show", "job", "2", "--json").stdout)
    assert as_json["id"] == tasks[0] and [x["id"] for x in as_json["tasks"]] == tasks
    assert [x["state"] for x in as_json["tasks"]].count("CANCELLED") == 1
    assert "tasks" not in json.loads(run(server, "vipu", "show", "job", str(tasks[3]), "--json").stdout)

    missing = run(server, "vipu", "show", "job", "2_99")
    assert missing.returncode == 3 and "job id '2_99': array job 2 has no task 99" in one_error(missing)
    nothing = run(server, "vipu", "logs", "99_1")
    assert nothing.returncode == 3 and "job 99 does not exist" in one_error(nothing)
    for text, what in (("1_0", "it is a single job"), ("3_0", "it is task 2_1")):
        out = run(server, "vipu", "show", "job", text)
        assert out.returncode == 2, out.stderr
        assert f"job id '{text}': job {text[0]} is not an array job ({what}); give N " in one_error(out)
    # the first task has the array's own id: 2_0 is that one task (single), 2 would be every task
    first = run(server, "vipu", "cancel", "2_0")
    assert first.returncode == 0 and first.stdout == "Job 2_0 cancelled: CANCELLED\n"
    assert show(server, tasks[0])["state"] == "CANCELLED"
    assert [show(server, t)["state"] for t in tasks[1:4]].count("CANCELLED") == 0

    def states():  # (priorities grow with age between two listings)
        return {i: (x["job_state"][0], x["hold"]) for i, x in jobs(server).items()}

    before = states()
    attempts = [("cancel", bad) for bad in ("1_2_6", "26_", "_5", "abc", "-3", "2__1", "99999999999999999999")]
    attempts += [(command, "1_2_6") for command in ("hold", "release", "requeue", "priority", "logs")]
    attempts += [("show job", "-3"), ("cancel", "1 2_x")]
    for command, bad in attempts:
        out = run(server, "vipu", *command.split(), *bad.split())
        assert out.returncode == 2, (command, bad, out.stdout, out.stderr)
        assert one_error(out) == (
            f"vipu: error: job id {bad.split()[-1]!r} is not a job id; give N (a job, or all tasks of array job N)"
            " or N_T (task T of array job N), e.g. 26 or 26_50"
        )
    assert states() == before and show(server, 1)["state"] == "PENDING"  # `cancel 1 2_x` cancelled nothing

    # every malformed id is named at once, not one per attempt, and the valid ones are left alone
    out = run(server, "vipu", "cancel", "x", "1", "2_[a]", "-3")
    assert out.returncode == 2 and out.stdout == ""
    named = ["job id 'x' is not a job id;", "job id '2_[a]': 'a' is not a task index", "job id '-3' is not a job id;"]
    lines = out.stderr.splitlines()
    assert len(lines) == 3 and all(line.startswith(f"vipu: error: {x}") for line, x in zip(lines, named)), lines
    assert states() == before


def test_several_ids_act_on_each_valid_one_and_report_each_bad_one(server):
    a, b, c = (submit(server, *HELD)[0] for _ in range(3))
    out = run(server, "vipu", "cancel", str(b), str(a), "9999")
    assert out.returncode == 3
    assert out.stdout.splitlines() == [f"Job {b} cancelled: CANCELLED", f"Job {a} cancelled: CANCELLED"]
    assert one_error(out).startswith("vipu: error: job 9999 does not exist")
    assert show(server, a)["state"] == show(server, b)["state"] == "CANCELLED"

    [later] = submit(server, "--ipus", "1", "--time-limit", "1m", "--begin", "now+1h")
    out = run(server, "vipu", "hold", str(later), str(a))
    assert out.returncode == 4 and out.stdout == f"Job {later} held: PENDING (held)\n"
    assert f"job {a} is CANCELLED" in one_error(out) and show(server, later)["held"]

    out = run(server, "vipu", "release", "9998", str(later), str(c))
    assert out.returncode == 3 and "job 9998 does not exist" in one_error(out)
    assert out.stdout.splitlines() == [f"Job {later} released: PENDING", f"Job {c} released: PENDING"]
    wait_for(lambda: show(server, c)["state"] == "RUNNING")

    out = run(server, "vipu", "requeue", str(c), "9997")
    assert out.returncode == 3 and "job 9997 does not exist" in one_error(out)
    assert show(server, c)["requeue_count"] == 1

    out = run(server, "vipu", "cancel", "9996", str(c), "--json")
    assert out.returncode == 3 and "job 9996" in one_error(out)
    assert [(int(x["id"]), x["state"]) for x in json.loads(out.stdout)] == [(c, "CANCELLED")]
    assert run(server, "vipu", "cancel", str(later)).returncode == 0  # none failed: exit 0


def test_a_cancel_of_several_starts_none_of_them(server):
    """scancel 15 16 20 with 20 waiting for the IPUs 15 and 16 hold: 20 must not start in between (each id's own
    cancel let the scheduler start the next waiting job as soon as the running ones had gone)."""
    running = [submit(server, "--ipus", "32", "--time-limit", "10m")[0] for _ in range(2)]
    wait_for(lambda: all(show(server, r)["state"] == "RUNNING" for r in running))
    array = submit(server, "--ipus", "64", "--time-limit", "10m", "--array", "0-9")[0]
    waiting = [f"{array}_{t}" for t in range(10)]
    out = run(server, "vipu", "cancel", *map(str, running), "9999", *waiting)  # an unknown id among them too
    assert out.returncode == 3 and "job 9999 does not exist" in one_error(out)
    assert out.stdout.splitlines() == [f"Job {i} cancelled: CANCELLED" for i in [*running, *waiting]]
    history = json.loads(run(server, "vipu", "history", "--json").stdout)
    assert len(history) == 12 and all(x["state"] == "CANCELLED" for x in history)
    assert [int(x["id"]) for x in history if x["start_time"] is not None] == running  # no waiting task ever ran


def test_a_whole_array_is_reported_as_the_array(server):
    array = submit(server, "--ipus", "1", "--time-limit", "1m", "--array", "0-29", "--begin", "now+1h")[0]
    for command, verb in (("hold", "held"), ("release", "released"), ("cancel", "cancelled")):
        out = run(server, "vipu", command, str(array))
        assert out.returncode == 0 and out.stdout == f"Array job {array}: 30 tasks {verb}\n", out.stderr
    history = json.loads(run(server, "vipu", "history", "--json").stdout)
    assert len(history) == 30 and {x["state"] for x in history} == {"CANCELLED"}

    small = submit(server, "--ipus", "32", "--time-limit", "1m", "--array", "0-2")[0]  # two run, one waits
    wait_for(lambda: sorted(x["job_state"][0] for x in jobs(server).values()) == ["PENDING", "RUNNING", "RUNNING"])
    out = run(server, "vipu", "cancel", str(small))
    assert out.returncode == 0
    assert out.stdout.splitlines() == [f"Array job {small}: 3 tasks cancelled"] + [
        f"Job {small}_{t} cancelled: CANCELLED" for t in range(3)
    ]
    assert jobs(server) == {}


def test_queue_and_history_take_comma_lists_and_info_names_its_ilds(server):
    [fill] = submit(server, "--ipus", "64", "--time-limit", "10m", "--user", "alice")
    wait_for(lambda: jobs(server)[fill]["job_state"] == ["RUNNING"])
    [bob] = submit(server, "--ipus", "1", "--time-limit", "1m", "--user", "bob")
    [carol] = submit(server, "--ipus", "1", "--time-limit", "1m", "--user", "carol")
    assert set(jobs(server, "--state", "RUNNING,PENDING")) == {fill, bob, carol}
    assert set(jobs(server, "-t", "R")) == {fill} and set(jobs(server, "-t", "PD,R", "-t", "CA")) == {fill, bob, carol}
    assert set(jobs(server, "--user", "alice,bob")) == {fill, bob}
    assert set(jobs(server, "-u", "alice", "-u", "carol")) == {fill, carol}

    info = json.loads(run(server, "vipu", "info", "--json").stdout)
    assert [(r["ild"], r["name"]) for r in info["ilds"]] == [(0, "pod64-0")]
    assert run(server, "vipu", "info").stdout.splitlines()[1].split("|")[0].strip() == "pod64-0"

    assert run(server, "vipu", "cancel", str(fill), str(bob), str(carol)).returncode == 0
    out = run(server, "vipu", "history", "--json", "--state", "CANCELLED,COMPLETED", "--user", "alice,bob")
    assert out.returncode == 0 and {int(x["id"]) for x in json.loads(out.stdout)} == {fill, bob}
    negative = run(server, "vipu", "history", "--limit", "-1")
    assert negative.returncode == 2
    assert one_error(negative) == "vipu: error: --limit is -1; give 0 for every job or N > 0 for the last N"


def test_exit_code_is_code_colon_signal_in_history_and_show(server, tmp_path):
    failing = tmp_path / "fail.yaml"
    failing.write_text("ipus: 1\ntime_limit: 1m\nworkload: {kind: sleep, duration: 0.2s, exit_code: 3}\n")
    [timeout] = submit(server, "--ipus", "1", "--time-limit", "1s")  # holds its partition until the limit
    [killed] = submit(server, "--ipus", "1", "--time-limit", "1m")
    [never] = submit(server, *HELD)
    [failed] = submit(server, str(failing))
    [ok] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "0.2s")
    wait_for(lambda: show(server, killed)["state"] == "RUNNING")
    assert run(server, "vipu", "cancel", str(killed), str(never)).returncode == 0
    wait_for(lambda: [show(server, j)["state"] for j in (timeout, failed, ok)] == ["TIMEOUT", "FAILED", "COMPLETED"])

    want = {timeout: "0:15", killed: "0:15", never: "0:0", failed: "3:0", ok: "0:0"}
    rows = [[c.strip() for c in line.split("|")] for line in run(server, "vipu", "history").stdout.splitlines()[1:]]
    assert {int(r[0]): r[4] for r in rows} == want
    for job, code in want.items():
        assert f"\nExitCode={code}\n" in run(server, "vipu", "show", "job", str(job)).stdout
    # --json carries the signal too (exit_code stays the workload's own, null for a run that was stopped)
    listed = {x["id"]: (x["exit_code"], x["signal"]) for x in json.loads(run(server, "vipu", "history", "--json").stdout)}
    assert listed == {timeout: (None, 15), killed: (None, 15), never: (None, 0), failed: (3, 0), ok: (0, 0)}
    assert (show(server, killed)["exit_code"], show(server, killed)["signal"]) == (None, 15)


# -- vipu simulate: no controller --------------------------------------------------------------------------------
def vipu(*args: str):
    return run(None, "vipu", *args, env=dict(os.environ))


def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
TWO_JOBS = "submit_time,ipus,duration\n0,16,100\n10,16,50\n"  # on 16 IPUs under fifo: JCTs 100 and 140, waits 0, 90


def test_simulate_refuses_bad_options_in_one_line(tmp_path):
    trace = write(tmp_path, "t.csv", TWO_JOBS)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(128, 256)) * 8)
    cases = [
        (["--trace", str(trace), "--policy", "lifo"],
         "vipu: error: --policy 'lifo' is not a policy; use one or more of backfill, fifo, priority, sjf (repeat"
         " --policy or separate the names with commas)"),
        (["--trace", str(garbage)],
         f"vipu: error: --trace {garbage} is not UTF-8 text, so not a trace; give an SWF log, an openb or Helios"
         " CSV, or a native CSV or JSONL trace (docs/traces.md)"),
        (["--trace", str(write(tmp_path, "e.csv", "submit_time,ipus,duration\n"))], "has no jobs to replay"),
        (["--trace", str(write(tmp_path, "b.csv", "submit_time,ipus,duration\n0,4,1\n0,12,1\n"))],
         "b.csv:3: ipus is 12, not a power of two"),
    ]
    for args, message in cases:
        out = vipu("simulate", *args)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert message in one_error(out)


@pytest.mark.parametrize(
    "name, text, where, message",
    [
        ("a.csv", "submit_time,ipus,duration,colour\n0,4,10,red\n", 1,
         "column 'colour' is unknown; use submit_time, ipus, duration, time_limit, user, qos, name, begin"),
        ("a.csv", "submit_time,ipus,duration\n0,4,10,99\n", 2, "more fields than the header's 3 columns"),
        ("a.csv", "submit_time,ipus,duration\n0,4,10\n5,4\n", 3, "fewer fields than the header's 3 columns"),
        ("a.csv", "submit_time,ipus,duration\n0,4,\n", 2, "duration is empty"),
        ("a.csv", "submit_time,ipus\n0,4\n", 2, "column duration is missing"),
        ("a.csv", "submit_time,ipus,duration\n0,4,soon\n", 2, "duration: 'soon' is not a duration"),
        ("a.csv", "submit_time,ipus,duration\n0,four,10\n", 2, "ipus: 'four' is not a whole number of IPUs"),
        ("a.csv", "submit_time,ipus,duration\n0,4,10\n0,12,10\n", 3, "ipus is 12, not a power of two"),
        ("a.csv", "submit_time,ipus,duration\n0,32,10\n", 2, "ipus is 32 but bow-pod16 has 16 IPUs"),
        ("a.csv", "submit_time,ipus,duration,qos\n0,4,10,gold\n", 2, "qos 'gold' is unknown"),
        ("a.csv", "submit_time,ipus,duration,time_limit\n0,4,10,0\n", 2, "invalid row: time_limit: is 0 seconds"),
        ("a.csv", "submit_time,ipus,duration,user\n0,4,10,a b\n", 2, "user"),
        ("a.jsonl", '{"submit_time": 0, "ipus": 4, "duration": 5, "x": 1}\n', 1, "column 'x' is unknown"),
        ("a.jsonl", '{"submit_time": 0, "ipus": 4, "duration": 5}\n\n[1]\n', 3, "a JSON list, not an object"),
        ("a.jsonl", "nonsense{\n", 1, "not JSON (Expecting value)"),
        ("a.jsonl", '{"submit_time": 0, "ipus": 4.5, "duration": 5}\n', 1, "ipus: 4.5 is not a whole number"),
        # messages whose fix was wrong: 0 is no time limit either; -4 is whole; 4.0 is 4
        ("a.csv", "submit_time,ipus,duration,time_limit\n0,4,10,-1\n", 2, "time_limit: '-1' is negative; give more than 0"),
        ("a.csv", "submit_time,ipus,duration\n0,-4,10\n", 2, "ipus: -4 is not a number of IPUs; give a power of two"),
        ("a.jsonl", '{"submit_time": 0, "ipus": 4.0, "duration": 5}\n', 1, "ipus: 4.0 is not a whole number; write 4"),
        # an openb list without one of its columns was read as a native trace, and refused for its other columns
        ("o.csv", "name,num_gpu,gpu_milli,qos,creation_time,deletion_time\nx,1,1000,LS,0,9\n", 1,
         "is not an openb pod list: column scheduled_time is missing"),
        ("o.csv", "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\nx,one,1000,LS,0,9,0\n", 2,
         "num_gpu is 'one', not a whole number"),
        ("o.csv", "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\nx,1,1000,LS,0,9,0,7\n", 2,
         "more fields than the header's 7 columns"),
        # rows that make no sense, once accepted (the first three became 4, 4 and 8 IPUs)
        ("o.csv", OPENB_HEADER + "p1,1000,100,-1,1000,,LS,Running,0,100,0\n", 2, "num_gpu is -1, below 0"),
        ("o.csv", OPENB_HEADER + "p1,1000,100,1,0,,LS,Running,0,100,0\n", 2, "gpu_milli is 0, outside 1..1000"),
        ("o.csv", OPENB_HEADER + "p1,1000,100,1,2000,,LS,Running,0,100,0\n", 2, "gpu_milli is 2000, outside 1..1000"),
        ("o.csv", OPENB_HEADER + "p1,1000,100,1,1000,,XX,Running,0,100,0\n", 2,
         "qos is 'XX', not one of openb's BE, LS, Burstable, Guaranteed"),
        ("o.csv", OPENB_HEADER + "p1,1000,100,1,1000,,LS,Running,0,100,200\n", 2,
         "deletion_time is before scheduled_time"),
        # a repeated column or key, once read with the last value winning
        ("a.csv", "submit_time,ipus,duration,duration\n0,4,10,20\n", 1, "column 'duration' is given more than once"),
        ("a.jsonl", '{"submit_time": 0, "ipus": 4, "duration": 5, "ipus": 8}\n', 1, "key 'ipus' is given more than once"),
    ],
)
def test_every_bad_trace_row_is_named_by_file_and_line(tmp_path, name, text, where, message):
    path = write(tmp_path, name, text)
    with pytest.raises(InvalidArgument) as error:
        main_replay(str(path), "bow-pod16", ["fifo"], timer=lambda: 0.0)
    assert error.value.message.startswith(f"{path}:{where}: ") and message in error.value.message


def test_simulate_json_has_the_tables_figures_with_units(tmp_path):
    trace = str(write(tmp_path, "t.csv", TWO_JOBS))
    table = vipu("simulate", "--trace", trace, "--pod", "bow-pod16", "--policy", "fifo")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[4].split()[:-1] == \
        ["fifo", "2", "2", "120", "100", "140", "45", "90", "90", "150", "100.0%", "100.0%", "0.0%", "0"]
    # job 2 waits 90 s and runs 50: bounded slowdown (90 + 50) / 50 = 2.8, job 1's is 1; one job queued for 90 of 150 s
    assert lines[-1].split() == ["fifo", "1.90", "2.80", "2.80", "1.90", "1.000", "0.6", "1"]
    for args in (("simulate", "--json"), ("--json", "simulate")):
        out = vipu(*args, "--trace", trace, "--pod", "bow-pod16", "--policy", "fifo,sjf")
        assert out.returncode == 0, out.stderr
        results = json.loads(out.stdout)
        assert [r["policy"] for r in results] == ["fifo", "sjf"] and results[0].pop("jobs_per_s") > 0
        mapping = table.stdout.splitlines()[1]  # what the text states, the JSON states too
        assert results[0] == {
            "trace": trace, "compress": 1.0, "skipped": {}, "mapping": mapping, "scheduler_config": None,
            "trace_waits": None,
            "policy": "fifo", "pod": "bow-pod16", "jobs": 2, "done": 2, "unfinished": 0, "avg_jct_s": 120.0,
            "p50_jct_s": 100.0, "p95_jct_s": 140.0, "avg_wait_s": 45.0, "p95_wait_s": 90.0, "max_wait_s": 90.0,
            "makespan_s": 150.0, "util_percent": 100.0, "arrival_util_percent": 100.0,
            "preempted_util_percent": 0.0, "frag_percent": 0.0, "preemptions": 0, "timeouts": 0,
            "avg_bsld": 1.9, "p95_bsld": 2.8, "max_bsld": 2.8, "bsld_threshold_s": 10.0, "avg_slowdown": 1.9,
            "fairness_jain": 1.0, "avg_queue": 0.6, "max_queue": 1,
        }


def test_simulate_json_names_openb_skips_and_mapping(tmp_path):
    rows = ["p0,1000,100,0,,,BE,Running,0,100,0", "p1,1000,100,1,1000,,LS,Running,0,100,", "p2,1000,100,2,500,,BE,Running,5,60,10"]
    trace = str(write(tmp_path, "o.csv", OPENB_HEADER + "\n".join(rows) + "\n"))
    out = vipu("--json", "simulate", "--trace", trace, "--pod", "bow-pod16", "--policy", "fifo")
    assert out.returncode == 0, out.stderr
    [r] = json.loads(out.stdout)
    assert r["skipped"] == {"never scheduled in the trace": 1, "no GPU (CPU-only task)": 1} and r["jobs"] == 1
    assert r["mapping"].startswith("openb -> IPU-Pod mapping: IPUs = next power of two") and r["trace"] == trace


def test_simulate_compress_brings_arrivals_closer(tmp_path):
    """--compress X: the second job arrives X times sooner after the first, so under fifo it waits longer."""
    trace = str(write(tmp_path, "t.csv", TWO_JOBS))
    waits = {}
    for x in ("1", "2", "4"):
        out = vipu("--json", "simulate", "--trace", trace, "--pod", "bow-pod16", "--policy", "fifo", "--compress", x)
        assert out.returncode == 0, out.stderr
        [r] = json.loads(out.stdout)
        assert r["compress"] == float(x) and (x == "1" or f"{x}x compressed" in r["mapping"])
        waits[x] = r["max_wait_s"]
    # job 2 arrives at 10 / X and waits for job 1, which ends at 100
    assert waits == {"1": 90.0, "2": 95.0, "4": 97.5}
    for bad in ("0", "-1", "nan"):
        out = vipu("simulate", "--trace", trace, "--pod", "bow-pod16", "--compress", bad)
        assert out.returncode == 2 and "--compress" in one_error(out), out.stderr


def test_the_trace_formats_page_is_true(tmp_path):
    page = (ROOT / "docs/traces.md").read_text()
    help_text = " ".join(vipu("simulate", "--help").stdout.split())
    assert "docs/traces.md" in help_text
    assert all(f"| `{column}` |" in page for column in NATIVE_COLUMNS)
    examples = re.findall(r"```(csv|jsonl) jobs\.\w+\n(.*?)```", page, re.S)
    assert [kind for kind, _ in examples] == ["csv", "jsonl"]
    for kind, text in examples:
        trace = load_trace(write(tmp_path, f"example.{kind}", text))
        assert [(j.name, j.ipus, j.time_limit, j.begin) for j in trace.jobs] == \
            [("pretrain", 16, 300, None), ("finetune", 8, 120, None), ("eval", 4, 60, 3600)]
        result = replay(trace.jobs, POD16, "backfill")
        assert (result.finished, result.timeouts, result.preemptions) == (3, 1, 1)  # as the page says
