"""A researcher's policy file: refused at load with its file and line, and guarded on every cycle (a raise or a
decision the snapshot does not allow is decided by the built-in policy instead, counted)."""

from __future__ import annotations

import pytest

from tests.scheduler.builders import drive, make, spec
from vipu.errors import InvalidArgument
from vipu.scheduler.config import load_scheduler_config
from vipu.scheduler.policies import backfill
from vipu.scheduler.policies.base import Preemption, QueuedJob, RunningJob, ScheduleDecision, ScheduleRequest, Start
from vipu.scheduler.policies.policy_file import GuardedPolicy, PolicyFile, load_policy_file

ENGINE = "from vipu.scheduler.policies import engine\n"


def write(tmp_path, text: str, name: str = "mine.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, message", [
    ("def schedule(request):\n    return (\n", ":2: SyntaxError: "),
    ("import no_such_module\n", ":1: ModuleNotFoundError: No module named 'no_such_module' (while loading it)"),
    ("x = 1\n", ":2: defines no schedule function; write `def schedule(request):`"),
    ("x = 1\nschedule = 3\n", ":2: schedule is not a function (it is int)"),
    ("\n\ndef schedule(request, other):\n    pass\n", ":3: schedule(request, other) does not take one argument"),
    ("def schedule():\n    pass\n", ":1: schedule() does not take one argument"),
    ("ORDER = 'lifo'\ndef schedule(request):\n    pass\n", ":1: ORDER is 'lifo'; give one of priority, submit,"),
    ("def schedule(request):\n    return request.nothing\n",
     ":2: AttributeError: 'ScheduleRequest' object has no attribute 'nothing' (when called on an empty Pod"),
    ("\ndef schedule(request):\n    return None\n", ":2: schedule() returned NoneType, not a ScheduleDecision"),
])
def test_a_wrong_policy_file_is_refused_with_its_file_and_line(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(InvalidArgument) as error:
        load_policy_file(path)
    assert error.value.message.startswith(f"--policy-file {path}") and message in error.value.message
    with pytest.raises(InvalidArgument):  # as vipu-server --policy-file reads it
        load_scheduler_config(None, None, path)


def test_a_missing_file_is_refused():
    with pytest.raises(InvalidArgument, match="--policy-file nowhere.py: cannot read it"):
        load_policy_file("nowhere.py")


def test_a_policy_file_schedules_a_scheduler_in_its_order(tmp_path):
    path = write(tmp_path, "ORDER = 'shortest'\n" + ENGINE + "def schedule(request):\n"
                 "    return engine.run(request, request.pending, 'strict')\n")
    config = load_scheduler_config(None, "fifo", path)
    s = make(policy="fifo", policy_file=config.policy_file)
    assert isinstance(s.policy, GuardedPolicy) and s.order.kind == "shortest"
    # one 16-IPU job runs; then the shortest of the two waiting goes first, whatever their submit order
    out = drive(s, [(0, spec(ipus=16, time_limit=100, workload={"kind": "sleep", "duration": 100})),
                    (1, spec(ipus=16, time_limit=600, workload={"kind": "sleep", "duration": 10})),
                    (2, spec(ipus=16, time_limit=60, workload={"kind": "sleep", "duration": 10}))])
    assert out["start"] == {1: 0, 3: 100, 2: 110} and s.policy.failures == 0


def test_a_site_config_names_its_policy_file_from_its_own_folder(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    write(site, "ORDER = 'submit'\n" + ENGINE + "def schedule(request):\n    return engine.run(request, request.pending,"
          " 'strict')\n")
    (site / "site.yaml").write_text("policy: fifo\npolicy_file: mine.py\n")
    monkeypatch.chdir(tmp_path)  # not the YAML's folder
    config = load_scheduler_config("site/site.yaml", None)
    assert config.policy_file == str((site / "mine.py").resolve()) and config.policy == "fifo"


def request(pending, running=(), free=(1 << 16) - 1) -> ScheduleRequest:
    return ScheduleRequest(now=5.0, total_ipus=16, available_mask=free, pending=iter(pending), running=list(running),
                           qos={}, healthy_mask=(1 << 16) - 1)


JOBS = [QueuedJob(1, 8, 60, 0, "a", "normal"), QueuedJob(2, 4, 60, 1, "b", "normal")]


def guarded(schedule) -> GuardedPolicy:
    return GuardedPolicy(PolicyFile("/x/mine.py", "mine", schedule, "submit"), backfill.schedule, "backfill")


def test_a_cycle_the_policy_raises_in_is_decided_by_the_built_in_one_over_the_whole_queue():
    def consumes_then_raises(r):
        for _ in r.pending:
            pass
        raise ValueError("boom")

    policy = guarded(consumes_then_raises)
    decision = policy(request(JOBS))
    assert [s.job_id for s in decision.starts] == [1, 2]  # backfill's, though the file had consumed the queue
    assert policy.failures == 1 and "ValueError: boom (at time 5.000)" in policy.first_failure


@pytest.mark.parametrize("starts, why", [
    ([Start(9, 0, 0)], "start of job 9: it is not a pending job the policy was shown"),
    ([Start(1, 4, 0)], "start of job 1 (8 IPUs) at IPU 4: not an aligned block"),
    ([Start(1, 8, 0), Start(2, 12, 0)], "start of job 2 (4 IPUs) at IPU 12: not an aligned block"),  # on job 1
    ([Start(2, 0, 0)], "start of job 2 (4 IPUs) at IPU 0: not an aligned block"),  # job 7 holds IPUs 0-3
    ([Start(2, 8, 0), Start(2, 12, 0)], "starts twice"),
])
def test_a_decision_the_snapshot_does_not_allow_is_not_applied(starts, why):
    running = [RunningJob(7, 4, 0, 0.0, 60.0, "c", "normal")]
    free = ((1 << 16) - 1) & ~0b1111

    def decides(r):
        list(r.pending)
        return ScheduleDecision(starts=list(starts))

    policy = guarded(decides)
    decision = policy(request(JOBS, running, free))
    assert policy.failures == 1 and why in policy.first_failure and "its decision was refused" in policy.first_failure
    assert {s.job_id: s.first_ipu for s in decision.starts} == {1: 8, 2: 4}  # backfill's best fit around job 7


def test_a_preemption_of_a_job_that_is_not_running_is_not_applied():
    def evicts_nobody(r):
        list(r.pending)
        return ScheduleDecision(preemptions=[Preemption(99, 1, "requeue")])

    policy = guarded(evicts_nobody)
    policy(request(JOBS))
    assert policy.failures == 1 and "names a job that is not running" in policy.first_failure


def test_a_good_decision_passes_with_its_block_as_place_mask():
    def starts_job_2(r):
        list(r.pending)
        return ScheduleDecision(starts=[Start(2, 12, 0)])

    policy = guarded(starts_job_2)
    assert policy(request(JOBS)).starts == [Start(2, 12, 0b1111 << 12)] and policy.failures == 0
