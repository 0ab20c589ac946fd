"""What `vipu logs` and `vipu show job` get from the controller for a train job: per-IPU usage that outlives the
run, a summary without empty lines, and, for a job requeued after losing a machine, the current run live below one
line on how the earlier run ended (not what the lost machine broke in it)."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pytest

from vipu.errors import InvalidArgument, MachineLost, NotFound
from vipu.hardware.pod_files import load_pod
from vipu.jobs import TrainWorkload, plan
from vipu.jobs.train import runner  # the controller's training imports run_training from it at each run
from vipu.scheduler.job_record import Transition
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.job_states import JobState
from vipu.jobs.train import runs as training
from vipu.jobs.train.run_history import stamp
from vipu.server import job_convert
from vipu.server.job_service import JobService
from vipu.v1.job_pb2 import GetJobRequest, JobLogsRequest, LogMark
from vipu.control.startup import open_plane

LOST = "the actor of machine 0 died or restarted"  # the fleet's cause for machine 0's IPUs
MLP = {"kind": "mlp", "layers": 3, "hidden": 16, "inputs": 12, "outputs": 5, "dtype": "fp32"}


@pytest.fixture
def rt(tmp_path):
    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)
    yield plane
    plane.store.close()


def submit(rt, ipus: int, steps: int, requeue: bool = True, **layout) -> int:
    spec = parse_spec({"name": "t", "ipus": ipus, "time_limit": "5m", "requeue": requeue, "workload": {
        "kind": "train", "model": MLP, "layout": {"micro_batch": 2, **layout}, "optimizer": "adam", "steps": steps}})
    with rt.lock:
        [job] = rt.scheduler.submit(spec, rt.now())
    return job.id


class LocalCall:
    """What a servicer reads of a gRPC call: no metadata, a generous deadline."""

    def invocation_metadata(self):
        return ()

    def time_remaining(self) -> float:
        return 10.0


def step_until(rt, done, timeout: float = 60.0):
    """Step the scheduling loop (no loop thread in these tests) until done() holds."""
    deadline = time.monotonic() + timeout
    while not (value := done()):
        assert time.monotonic() < deadline, "timed out"
        rt.step()
        time.sleep(0.02)
    return value


def ended(rt, job_id: int) -> bool:
    return rt.scheduler.job(job_id).state in (JobState.COMPLETED, JobState.FAILED)


def test_per_ipu_usage_is_stored_with_the_job_and_logged(rt):
    job = submit(rt, 4, 3, r=4)
    step_until(rt, lambda: ended(rt, job))
    rt.runners["train"].results.clear()  # from the store, as after the run's end (the machines' gauges are 0 by then)
    stored = json.loads(rt.runners["train"].record(job).model_dump_json(exclude={"result": {"reports"}}))  # GetJob's
    usage = stored["result"]["ipu_usage"]
    assert [u["ipu"] for u in usage] == [0, 1, 2, 3] and all(0 < u["utilisation"] <= 1 for u in usage)
    assert all(u["sram_peak_bytes"] > u["activation_peak_bytes"] > 0 for u in usage)
    lines = rt.runners["train"].log_lines(job)
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["IPU", "MACHINE", "UTIL"])
    assert [line.split()[0] for line in lines[header + 1: header + 5]] == ["0", "1", "2", "3"]
    assert f"{usage[2]['utilisation']:.2%}" in lines[header + 3]


def test_a_step_line_splits_the_step_as_vipu_plan_does(rt):
    """Regression: the step line gave compute, comm and the bubble's share only, so `vipu logs` could not be read
    against `vipu plan`'s split (no syncs, no streaming memory). Now every part of the plan, by the plan's name and
    in its order, then the line's earlier totals; --json's steps carry every part under the plan's JSON field."""
    layout = {"t": 2, "p": 2, "r": 2, "rts": True, "offload_optimizer": True}
    job = submit(rt, 8, 2, **layout)
    step_until(rt, lambda: ended(rt, job))
    record = rt.runners["train"].record(job)
    work = TrainWorkload(model=MLP, layout={"micro_batch": 2, **layout}, optimizer="adam", steps=2)
    predicted = plan(work, load_pod("bow-pod16"))
    table = predicted.table().splitlines()
    top = table.index("step time") + 1
    names = [line[2:30].strip() for line in table[top:top + 9]]
    assert table[top + 9].split()[0] == "total"
    assert names == ["compute", "pipeline bubble", "tensor-parallel collectives", "pipeline sends",
                     "batch-norm statistics", "syncs", "data-parallel allreduce", "streaming memory", "host I/O"]
    fields = ["compute_s", "bubble_s", "tensor_parallel_s", "pipeline_send_s", "batch_norm_s", "sync_s",
              "data_parallel_s", "streaming_s", "host_io_s"]
    assert set(fields) <= set(predicted.model_dump()["time"])  # `vipu plan --json`'s names
    lines = [line for line in rt.runners["train"].log_lines(job) if line.startswith("step ")]
    steps = record.run_data()["steps"]
    assert len(lines) == len(steps) == 2
    for line, step in zip(lines, steps):
        split, totals = line[line.index("(") + 1:line.index(")")].split("; ")
        shown = [part.rsplit(" ", 2) for part in split.split(", ")]
        assert [name for name, _, _ in shown] == names and {unit for _, _, unit in shown} == {"us"}
        assert [value for _, value, _ in shown] == [f"{step[f] * 1e6:,.1f}" for f in fields]
        assert step["streaming_s"] > 0 and step["sync_s"] > 0 and step["batch_norm_s"] == step["host_io_s"] == 0
        assert sum(step[f] for f in fields) == pytest.approx(step["emulated_step_s"], rel=1e-12)
        assert totals == f"comm {step['comm_s'] * 1e6:,.1f} us, bubble {step['bubble_fraction']:.1%}"
        assert line.startswith(f"step {step['step']:>4}  loss {step['loss']:.6f}  emulated step ")


def test_a_one_ipu_job_has_no_empty_link_traffic_line(rt):
    job = submit(rt, 1, 2)
    step_until(rt, lambda: ended(rt, job))
    lines = rt.runners["train"].log_lines(job)
    assert "link traffic: none" in lines and "link traffic: " not in lines


def test_a_requeued_job_logs_its_current_run_live_below_how_the_lost_one_ended(rt, monkeypatch):
    real, release, first_stepped = runner.run_training, threading.Event(), threading.Event()

    def lose_machine_0(w, pod, first_ipu, factory, *, on_step, should_stop, environments):
        if first_ipu != 0:
            return real(w, pod, first_ipu, factory, on_step=on_step, should_stop=should_stop,
                        environments=environments)
        # run 1: one step, then its machine goes and the next collective finds its tensors gone, long after
        real(w.model_copy(update={"steps": 1}), pod, first_ipu, factory, on_step=on_step, environments=environments)
        first_stepped.set()
        release.wait(60)
        raise NotFound("no tensor 'opt.m' on IPU 0; put it there first")

    monkeypatch.setattr(runner, "run_training", lose_machine_0)
    job = submit(rt, 4, 4, r=4)
    step_until(rt, first_stepped.is_set)
    rt.fail_ipus([0, 1, 2, 3], LOST)  # what the fleet does when machine 0's actor dies: NODE_FAIL, requeued
    assert rt.scheduler.job(job).state is JobState.PENDING
    gone = rt.runners["train"].log_lines(job)[-1]  # the lost run's thread is still blocked: its end is said already
    assert gone.startswith("run 1 ended NODE_FAIL at ") and gone.endswith(": machine 0 was lost; requeued")

    step_until(rt, lambda: ended(rt, job))  # run 2, on machine 1, while run 1's thread still hangs
    assert rt.scheduler.job(job).state is JobState.COMPLETED and rt.scheduler.job(job).first_ipu == 4
    release.set()  # run 1's thread now fails, long after its job moved on
    deadline = time.monotonic() + 10
    while any(t.name == f"vipu-train-{job}" for t in threading.enumerate()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    rt.runners["train"].results.clear()  # as the store has it
    lines = rt.runners["train"].log_lines(job)
    assert lines[0] == gone  # the earlier run in the user's words, above the current run
    assert not any("NotFound" in line or "training failed" in line for line in lines), lines
    assert sum(line.startswith("step ") for line in lines) == 4  # run 2's steps, all of them
    assert rt.runners["train"].record(job).result.first_ipu == 4 and rt.runners["train"].record(job).earlier_runs == [gone]


def test_a_run_ended_by_a_lost_machine_keeps_the_steps_it_logged(rt, monkeypatch):
    """Regression: a job that ended NODE_FAIL (not requeued) lost every step it had logged: `vipu logs` showed only
    how it ended, `vipu show job` no losses."""
    real, stepped = runner.run_training, threading.Event()

    def lose_a_machine_after_two_steps(w, pod, first_ipu, factory, *, on_step, should_stop, environments):
        real(w.model_copy(update={"steps": 2}), pod, first_ipu, factory, on_step=on_step, environments=environments)
        stepped.set()
        raise MachineLost("machine 0 (actor ag00) is gone: the actor died")

    monkeypatch.setattr(runner, "run_training", lose_a_machine_after_two_steps)
    monkeypatch.setattr(rt.machines, "check", lambda: rt.fail_ipus([0, 1, 2, 3], LOST))  # what the health check finds
    job = submit(rt, 4, 5, requeue=False, r=4)
    step_until(rt, lambda: rt.scheduler.job(job).state is JobState.NODE_FAIL and job in rt.runners["train"].results)
    rt.runners["train"].results.clear()  # as the store has it
    record = rt.runners["train"].record(job)
    assert record.result is None and [r.step for r in record.steps] == [0, 1]
    lines = rt.runners["train"].log_lines(job)
    assert [line.split()[:2] for line in lines if line.startswith("step ")] == [["step", "0"], ["step", "1"]]
    assert lines[-1].startswith("run 1 ended NODE_FAIL at ") and lines[-1].endswith(": machine 0 was lost")
    reply = JobService(rt).GetJob(GetJobRequest(id=job), LocalCall())  # its summary: losses, not steps (JobLogs')
    summary = json.loads(reply.result_json)
    assert summary["losses"] == [r.loss for r in record.steps] and "steps" not in summary
    logged = JobService(rt).JobLogs(JobLogsRequest(id=job), LocalCall())
    assert [r["step"] for r in json.loads(logged.record_json)["steps"]] == [0, 1] and list(logged.lines) == lines


def test_how_each_run_ended_survives_a_restart(rt, tmp_path, monkeypatch):
    """Regression: after a restart every earlier run read "an IPU or machine under its partition failed, or the
    controller stopped", the cause each had was gone with the old controller's memory."""
    real, stepped, hold = runner.run_training, threading.Event(), threading.Event()

    def first_run_loses_its_machine(w, pod, first_ipu, factory, *, on_step, should_stop, environments):
        real(w.model_copy(update={"steps": 1}), pod, first_ipu, factory, on_step=on_step, environments=environments)
        stepped.set()
        hold.wait(60)  # run 1 waits for its lost machine; run 2 is still going when the controller stops
        return real(w.model_copy(update={"steps": 0}), pod, first_ipu, factory, environments=environments)

    monkeypatch.setattr(runner, "run_training", first_run_loses_its_machine)
    job = submit(rt, 4, 3, r=4)
    step_until(rt, stepped.is_set)
    stepped.clear()
    rt.fail_ipus([0, 1, 2, 3], LOST)
    step_until(rt, lambda: stepped.is_set() and rt.scheduler.job(job).first_ipu == 4)  # run 2, on machine 1
    lost = rt.runners["train"].record(job).earlier_runs
    assert len(lost) == 1 and lost[0].endswith(": machine 0 was lost; requeued")
    rt.runners["train"].shutdown()  # the controller stops under run 2: nothing of its end is recorded
    rt.store.close()
    hold.set()

    again = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090)
    try:
        assert again.scheduler.job(job).state is JobState.PENDING
        lines = again.runners["train"].log_lines(job)
        assert lines[0] == lost[0]  # run 1's cause, as the old controller knew it
        stopped = [line for line in lines if line.startswith("run 2 ended NODE_FAIL at ")]
        assert stopped and stopped[0].endswith(": the controller stopped while it ran: its workload does not outlive"
                                               " the controller (a training run lives in the controller's process; a"
                                               " program's supervisor stops it when the controller goes); requeued")
    finally:
        again.store.close()


def test_steps_of_a_requeued_run_show_while_it_runs(rt, monkeypatch):
    """The live view follows the current run, even while the lost run's thread is still winding down."""
    real, hold, stepped = runner.run_training, threading.Event(), threading.Event()
    runs = []

    def slow(w, pod, first_ipu, factory, *, on_step, should_stop, environments):
        runs.append(first_ipu)
        if first_ipu == 0:
            real(w.model_copy(update={"steps": 1}), pod, first_ipu, factory, on_step=on_step,
                 environments=environments)
            hold.wait(60)
            raise NotFound("no tensor 'opt.m' on IPU 0; put it there first")

        def step_then_wait(report):
            on_step(report)
            stepped.set()
            hold.wait(60)

        return real(w, pod, first_ipu, factory, on_step=step_then_wait, should_stop=should_stop,
                    environments=environments)

    monkeypatch.setattr(runner, "run_training", slow)
    job = submit(rt, 4, 2, r=4)
    step_until(rt, lambda: runs == [0] and rt.runners["train"].progress().get(job))
    rt.fail_ipus([0, 1, 2, 3], LOST)
    step_until(rt, stepped.is_set)
    lines = rt.runners["train"].log_lines(job)
    assert lines[0].startswith("run 1 ended NODE_FAIL") and lines[-1].startswith("step    0  loss ")
    assert rt.runners["train"].progress()[job] and rt.runners["train"].record(job).earlier_runs == [lines[0]]
    hold.set()
    step_until(rt, lambda: ended(rt, job))


@pytest.mark.parametrize(("states", "line"), [
    # requeued while it ran, then cancelled while it waited: the run was stopped by the requeue, not the cancel
    (["RUNNING", "PENDING", "CANCELLED"], "run 1 stopped at {2}: requeued while it ran (vipu requeue)"),
    (["RUNNING", "COMPLETING", "CANCELLED"], "run 1 ended CANCELLED at {3}: "),
    (["RUNNING", "NODE_FAIL", "PENDING"], "run 1 ended NODE_FAIL at {2}: "),
])
def test_how_a_run_ended_is_read_from_the_transition_that_ended_it(states, line):
    history = [Transition(JobState.PENDING, 1_790_000_000.0)] + [
        Transition(JobState[s], 1_790_000_001.0 + i) for i, s in enumerate(states)]
    job = SimpleNamespace(id=1, history=history, preemption=None, ended_by=None, state=JobState[states[-1]])
    trainer = training.TrainRuns.__new__(training.TrainRuns)
    trainer.runs = {}
    said = trainer._ending(job, 1, None)
    stamps = [stamp(t.at) for t in history]
    assert said.startswith(line.format(*stamps)), said
    assert ("; requeued" in said) is (states[-1] == "PENDING")


def from_step_0(lines: list[str]) -> list[str]:
    """A log from its first step's line on (what comes before, the run's opening, a follower reads at its start)."""
    return lines[next(i for i, line in enumerate(lines) if line.startswith("step    0")):]


def pause_after_step_1(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Training runs stop after step 1 until `go` is set; `paused` once one has."""
    real, paused, go = runner.run_training, threading.Event(), threading.Event()

    def paused_training(w, pod, first_ipu, factory, *, on_step, **rest):
        def step(report):
            on_step(report)
            if report.step == 1:
                paused.set()
                go.wait(60)
        return real(w, pod, first_ipu, factory, on_step=step, **rest)

    monkeypatch.setattr(runner, "run_training", paused_training)
    return paused, go


def follower(rt, job: int):
    """JobLogs with follow, from a mark (None: a follow's first read)."""
    service = JobService(rt)

    def follow(mark=None):
        request = JobLogsRequest(id=job, follow=True)
        if mark is not None:
            request.after.CopyFrom(mark)
        return service.JobLogs(request, LocalCall())

    return follow


def test_a_follower_reads_a_training_runs_steps_as_they_come_then_how_it_ended_once(rt, monkeypatch):
    """vipu logs -f of a train job: each reply has the steps since the mark the last one gave, the opening lines
    once, and once the job has ended its closing lines, then nothing; all of it is what `vipu logs` prints."""
    paused, go = pause_after_step_1(monkeypatch)
    job = submit(rt, 4, 4, r=4)
    follow = follower(rt, job)

    waiting = follow()
    assert (waiting.job.state, list(waiting.lines)) == ("PENDING", [])  # (no step of the loop yet)
    step_until(rt, paused.is_set)
    first = follow(waiting.mark)
    assert first.job.state == "RUNNING" and first.lines[0].startswith("poprun environment: 1 instance")
    assert [line.split()[:2] for line in first.lines if line.startswith("step ")] == [["step", "0"], ["step", "1"]]
    assert list(follow(first.mark).lines) == []  # nothing new: nothing twice
    go.set()
    step_until(rt, lambda: ended(rt, job))
    rest = follow(first.mark)
    assert rest.job.state == "COMPLETED" and [line.split()[:2] for line in rest.lines[:2]] == [["step", "2"],
                                                                                                ["step", "3"]]
    assert "4 of 4 steps" in rest.lines[2] and list(follow(rest.mark).lines) == []  # its end said once
    followed, whole = [*first.lines, *rest.lines], rt.runners["train"].log_lines(job)
    assert from_step_0(followed) == from_step_0(whole)
    with pytest.raises(InvalidArgument, match="after.offset is -1; send back the mark the last reply gave"):
        job_convert.log_mark(LogMark(run=1, offset=-1))


def test_a_follower_of_a_run_cancelled_mid_step_gets_its_summary_once_its_thread_is_back(rt, monkeypatch):
    """Regression: cancelled while a step was going, the job had ended before the run's thread was back; a read
    then gave how the run ended and marked the log closed, so the summary the thread then recorded (`vipu logs`
    prints it) never came, and the follower, the job ended and nothing new, stopped without it."""
    paused, go = pause_after_step_1(monkeypatch)
    job = submit(rt, 4, 4, r=4)
    follow = follower(rt, job)

    step_until(rt, paused.is_set)
    replies = [follow()]
    with rt.lock:
        rt.driver.apply(rt.scheduler.cancel([job], rt.now()), rt.now())
    replies.append(follow(replies[-1].mark))  # the job has ended, its run's thread not yet back
    assert replies[-1].job.state == "CANCELLED"
    go.set()
    step_until(rt, lambda: rt.runners["train"].runs[job].done)
    while not (replies[-1].job.state == "CANCELLED" and not replies[-1].lines and replies[-1].mark.closed):
        assert len(replies) < 5, [list(r.lines) for r in replies]
        replies.append(follow(replies[-1].mark))
    followed = [line for r in replies for line in r.lines]
    whole = rt.runners["train"].log_lines(job)
    assert from_step_0(followed) == from_step_0(whole)
    assert any(line.endswith("2 of 4 steps (stopped early)") for line in followed)  # (the summary)


def test_a_run_ended_by_a_lost_machine_names_what_ended_it_not_machines_lost_later(rt, monkeypatch):
    """Regression: a Ray node lost in waves: `vipu logs` said "machines 0, 1, ... were lost" (every machine failed
    by the time the run's thread ended) while `vipu show job` said EndedBy=... the first wave's machines."""
    real, stepped, release = runner.run_training, threading.Event(), threading.Event()

    def wait_then_lose(w, pod, first_ipu, factory, *, on_step, should_stop, environments):
        real(w.model_copy(update={"steps": 1}), pod, first_ipu, factory, on_step=on_step, environments=environments)
        stepped.set()
        release.wait(60)
        raise MachineLost("a machine actor did not complete its part of the collective")

    monkeypatch.setattr(runner, "run_training", wait_then_lose)
    job = submit(rt, 8, 5, requeue=False, r=8)
    step_until(rt, stepped.is_set)
    rt.fail_ipus([0, 1, 2, 3], LOST)  # the first wave: machine 0
    ended_at = rt.scheduler.job(job).history[-1].at
    while rt.now() <= ended_at:  # the next wave comes later (the clock's resolution)
        time.sleep(0.001)
    rt.fail_ipus([4, 5, 6, 7], "the actor of machine 1 died or restarted")  # after the run ended
    release.set()
    step_until(rt, lambda: job in rt.runners["train"].results)
    lines = rt.runners["train"].log_lines(job)
    assert lines[-1].startswith("run 1 ended NODE_FAIL at ") and lines[-1].endswith(": machine 0 was lost"), lines
    assert rt.scheduler.job(job).ended_by == f"IPUs 0, 1, 2, 3 of its partition failed ({LOST})"
