"""JobService requests a CLI does not cover on its own: sprio for named jobs."""

from __future__ import annotations

import json
import time

import grpc
import pytest

from vipu.v1 import job_pb2 as j, job_pb2_grpc


@pytest.fixture
def jobs(server):
    with grpc.insecure_channel(server.address) as channel:
        yield job_pb2_grpc.JobServiceStub(channel)


def submit(jobs, **spec) -> list[int]:
    body = {"ipus": 4, "time_limit": "10m", "user": "u", **spec}
    return list(jobs.SubmitJob(j.SubmitJobRequest(spec=json.dumps(body).encode()), timeout=5).job_ids)


def test_priorities_of_named_jobs_an_array_and_jobs_without_one(jobs):
    [held] = submit(jobs, begin="now+1hour")  # pending, not held (a held job has no priority: below)
    tasks = submit(jobs, begin="now+1hour", array="0-2")
    rows = jobs.Priorities(j.PrioritiesRequest(ids=[tasks[0]]), timeout=5).jobs
    assert sorted(r.job_id for r in rows) == tasks  # the array job id stands for its pending tasks
    one = jobs.Priorities(j.PrioritiesRequest(ids=[tasks[0]], single=True), timeout=5).jobs
    assert [r.job_id for r in one] == [tasks[0]]  # single: the first task alone
    assert [r.job_id for r in jobs.Priorities(j.PrioritiesRequest(ids=[held]), timeout=5).jobs] == [held]
    with pytest.raises(grpc.RpcError) as missing:
        jobs.Priorities(j.PrioritiesRequest(ids=[held, 999]), timeout=5)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND and "job 999 does not exist" in missing.value.details()
    jobs.HoldJobs(j.JobIdsRequest(ids=[held]), timeout=5)
    with pytest.raises(grpc.RpcError) as on_hold:  # sprio leaves a held job out (its priority is 0)
        jobs.Priorities(j.PrioritiesRequest(ids=[held]), timeout=5)
    assert on_hold.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"job {held} is held (JobHeldUser), so has priority 0" in on_hold.value.details()
    jobs.CancelJobs(j.CancelJobsRequest(ids=[held]), timeout=5)
    with pytest.raises(grpc.RpcError) as ended:
        jobs.Priorities(j.PrioritiesRequest(ids=[held]), timeout=5)
    assert ended.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"job {held} is CANCELLED; only pending jobs have a priority" in ended.value.details()


def test_history_with_duplicates_lists_runs_that_ended_and_went_back_to_the_queue(jobs, server):
    """sacct -D -s NODE_FAIL: a job lost and requeued is PENDING again; its lost run is a row of its own with
    duplicates, and not without (a state matches the job's latest run, as plain history lists each job once)."""
    from vipu.v1 import admin_pb2, admin_pb2_grpc

    [job] = submit(jobs)
    deadline = time.monotonic() + 10
    while jobs.GetJob(j.GetJobRequest(id=job), timeout=5).state != "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    with grpc.insecure_channel(server.address) as channel:
        first_ipu = json.loads(jobs.GetJob(j.GetJobRequest(id=job), timeout=5).detail_json)["first_ipu"]
        admin_pb2_grpc.AdminServiceStub(channel).FailIpus(admin_pb2.FailIpusRequest(ipus=[first_ipu]), timeout=5)
    assert jobs.History(j.HistoryRequest(states=["NODE_FAIL"]), timeout=5).jobs == []
    listed = jobs.History(j.HistoryRequest(states=["NODE_FAIL"], duplicates=True), timeout=5).jobs
    # the run that ended NODE_FAIL, as sacct --duplicates lists it (the job itself is PENDING again, or RUNNING)
    assert [(x.id, x.state) for x in listed] == [(job, "NODE_FAIL")]
    history = json.loads(jobs.GetJob(j.GetJobRequest(id=job), timeout=5).detail_json)["history"]
    assert (listed[0].start_time, listed[0].end_time) == (history[1]["at"], history[2]["at"])
    assert [h["state"] for h in history[1:4]] == ["RUNNING", "NODE_FAIL", "PENDING"]
    assert jobs.History(j.HistoryRequest(), timeout=5).jobs == []  # by default only jobs that ended for good


def test_output_is_written_when_a_run_ends_with_slurms_patterns(jobs, tmp_path):
    (tmp_path / "logs").mkdir()
    pattern = str(tmp_path / "logs" / "%x-%A_%a.out")
    tasks = submit(jobs, name="sweep", array="0-1", output=pattern, time_limit="1m", submit_dir=str(tmp_path),
                   workload={"kind": "sleep", "duration": 0.2, "exit_code": 3})
    files = [tmp_path / "logs" / f"sweep-{tasks[0]}_{i}.out" for i in (0, 1)]
    deadline = time.monotonic() + 20
    while not all(f.exists() for f in files):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first = files[0].read_text().splitlines()[0]
    assert first.startswith(f"vipu-sim job {tasks[0]}_0 (sweep, user u) on partition slurm_{tasks[0]}: FAILED at ")


def test_cancel_by_user_takes_each_task_once_and_single_names_one_task(jobs):
    """Regression: scancel -u of a user with an array cancelled the array through task 0's id, then refused its
    other tasks as 'already ended'; an array job's own id could not name just its task 0."""
    tasks = submit(jobs, hold=True, array="0-3")
    other = submit(jobs, hold=True, user="v")
    one = jobs.CancelJobs(j.CancelJobsRequest(ids=[tasks[0]], single=True), timeout=5).jobs
    assert [x.id for x in one] == [tasks[0]]
    assert [jobs.GetJob(j.GetJobRequest(id=t), timeout=5).state for t in tasks] == ["CANCELLED"] + ["PENDING"] * 3
    jobs.CancelJobs(j.CancelJobsRequest(users=["u"]), timeout=5)
    assert {jobs.GetJob(j.GetJobRequest(id=t), timeout=5).state for t in tasks} == {"CANCELLED"}
    assert jobs.GetJob(j.GetJobRequest(id=other[0]), timeout=5).state == "PENDING"


def test_requeue_of_an_array_job_id_requeues_its_tasks_that_ran(jobs):
    tasks = submit(jobs, array="0-2", time_limit="1m", workload={"kind": "sleep", "duration": 0.1})
    deadline = time.monotonic() + 20
    while {jobs.GetJob(j.GetJobRequest(id=t), timeout=5).state for t in tasks} != {"COMPLETED"}:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert jobs.History(j.HistoryRequest(states=["RUNNING"]), timeout=5).jobs == []  # ran, but RUNNING no more
    jobs.RequeueJobs(j.JobIdsRequest(ids=[tasks[0]]), timeout=5)
    assert all(jobs.GetJob(j.GetJobRequest(id=t), timeout=5).requeue_count == 1 for t in tasks)


def test_a_workload_that_ends_exactly_at_its_time_limit_completes(jobs):
    """As the replay decides it: a limit counts only when it ran out strictly before the workload's end."""
    [job] = submit(jobs, time_limit="1s", workload={"kind": "sleep", "duration": 1})
    deadline = time.monotonic() + 20
    while jobs.GetJob(j.GetJobRequest(id=job), timeout=5).state in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert jobs.GetJob(j.GetJobRequest(id=job), timeout=5).state == "COMPLETED"


def request(source="", request_id="", **spec) -> j.SubmitJobRequest:
    body = {"ipus": 4, "time_limit": "10m", "user": "u", "hold": True, **spec}
    return j.SubmitJobRequest(spec=json.dumps(body).encode(), source=source, request_id=request_id)


def test_submit_jobs_queues_several_specs_in_order_and_a_retry_gets_the_same_ids(jobs):
    batch = [request(request_id="a", name="one"), request(request_id="b", name="sweep", array="0-2"),
             request(request_id="c", name="three", ipus=8)]
    reply = jobs.SubmitJobs(j.SubmitJobsRequest(jobs=batch), timeout=5)
    ids = [list(x.job_ids) for x in reply.jobs]
    first = ids[0][0]
    assert ids == [[first], [first + 1, first + 2, first + 3], [first + 4]]
    assert not any(x.duplicate for x in reply.jobs)
    listed = jobs.ListJobs(j.ListJobsRequest(), timeout=5).jobs
    assert sorted((x.id, x.name, x.ipus, x.reason) for x in listed if x.id in (first, first + 4)) == [
        (first, "one", 4, "JobHeldUser"), (first + 4, "three", 8, "JobHeldUser")]
    again = jobs.SubmitJobs(j.SubmitJobsRequest(jobs=batch), timeout=5)
    assert [list(x.job_ids) for x in again.jobs] == ids and all(x.duplicate for x in again.jobs)
    assert len(jobs.ListJobs(j.ListJobsRequest(), timeout=5).jobs) == 5


def test_submit_jobs_refuses_all_when_one_spec_is_bad_and_names_it(jobs):
    batch = [request("a.yaml"), request("b.yaml", ipus=3), request("c.yaml")]
    with pytest.raises(grpc.RpcError) as refused:
        jobs.SubmitJobs(j.SubmitJobsRequest(jobs=batch), timeout=5)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith("spec 2 of 3 (b.yaml): ipus")
    assert refused.value.details().endswith("nothing was queued")
    with pytest.raises(grpc.RpcError) as unparsable:  # refused before the scheduler sees any
        jobs.SubmitJobs(j.SubmitJobsRequest(jobs=[request("a.yaml"), j.SubmitJobRequest(spec=b"{", source="x.json")]),
                        timeout=5)
    assert unparsable.value.details().startswith("spec 2 of 2 (x.json): ")
    assert jobs.ListJobs(j.ListJobsRequest(), timeout=5).jobs == []
    assert submit(jobs, hold=True) == [1]  # no job id was used up


def test_submit_jobs_takes_one_to_ten_thousand_specs(jobs):
    for count, says in ((0, "jobs is empty"), (10_001, "jobs has 10,001 specs; give at most 10,000")):
        with pytest.raises(grpc.RpcError) as refused:
            jobs.SubmitJobs(j.SubmitJobsRequest(jobs=[request()] * count), timeout=30)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and says in refused.value.details()
    reply = jobs.SubmitJobs(j.SubmitJobsRequest(jobs=[request()] * 10_000), timeout=60)
    assert [x.job_ids[0] for x in reply.jobs] == list(range(1, 10_001))


def test_a_refusal_names_a_long_source_cut_short(jobs):
    """A 20 kB source travelled whole in the refusal's metadata: the client got a transport error instead."""
    bad = request(source="s" * 20_000, ipus=3)
    with pytest.raises(grpc.RpcError) as refused:
        jobs.SubmitJobs(j.SubmitJobsRequest(jobs=[request(), bad]), timeout=5)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith(f"spec 2 of 2 ({'s' * 200}...): ipus")


def test_a_mass_cancel_by_user_takes_every_job_and_a_brief_reply_leaves_out_spec_and_detail(jobs):
    """walk26f: `vipu cancel -u root` of 49,000 jobs missed the CLI's deadline, most of it the 34 MB reply."""
    batch = jobs.SubmitJobs(j.SubmitJobsRequest(jobs=[request()] * 3000), timeout=60)
    queued = [i for x in batch.jobs for i in x.job_ids]
    [other] = submit(jobs, hold=True, user="v")
    reply = jobs.CancelJobs(j.CancelJobsRequest(users=["u"], brief=True), timeout=30).jobs
    assert [x.id for x in reply] == queued and {x.state for x in reply} == {"CANCELLED"}
    assert not any(x.spec_json or x.detail_json or x.HasField("spec") for x in reply)
    listed = jobs.ListJobs(j.ListJobsRequest(brief=True), timeout=10).jobs
    assert [(x.id, x.state) for x in listed] == [(other, "PENDING")]
    [full] = jobs.CancelJobs(j.CancelJobsRequest(ids=[other]), timeout=5).jobs  # not brief: the whole job
    assert full.state == "CANCELLED" and json.loads(full.spec_json)["user"] == "v"
