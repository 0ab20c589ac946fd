"""`--dependency after:ID+MINUTES` and `aftercorr:ID` through the installed CLI and a live controller: the queue's
reason, expected start and %E, `show job`'s Dependency=, --test-only and the refusals. The wake-up at the end of a
delay is the virtual-time test's (tests/scheduler/test_timed_and_paired_dependencies.py): a delay is a minute at
least, too long to wait for here."""

from __future__ import annotations

import json

from vipu.cli.queue_fields import when

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import jobs, show, submit, wait_for


def test_after_with_a_delay_waits_with_reason_dependency_and_shows_when(server):
    [target] = submit(server, "--ipus", "1", "--time-limit", "10m")  # a hold workload: runs until cancelled
    started = wait_for(lambda: (d := show(server, target))["state"] == "RUNNING" and d)["start_time"]
    [job] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "-d", f"after:{target}+5")
    detail = wait_for(lambda: (d := show(server, job))["estimated_start"] and d)
    assert (detail["state"], detail["reason"]) == ("PENDING", "Dependency")
    assert abs(detail["estimated_start"] - (started + 300)) < 1e-3 and detail["spec"]["dependency"] == f"after:{target}+5"
    assert f"Dependency=after:{target}+5(unfulfilled)\n" in run(server, "vipu", "show", "job", str(job)).stdout
    listed = run(server, "vipu", "queue", "-j", str(job), "--no-header", "-o", "%i|%E|%r").stdout
    assert listed.split() == [f"{job}|after:{target}+5(unfulfilled)|Dependency"]
    assert jobs(server, "--start")[job]["start_time"]["number"] == int(started + 300)
    assert when(started + 300) in run(server, "vipu", "queue", "--start", "-j", str(job)).stdout  # squeue --start
    test = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "1m", "-d", f"after:{target}+2", "--test-only",
               "--json")
    assert test.returncode == 0, test.stderr
    expected = json.loads(test.stdout)
    assert expected["reason"] == "Dependency" and abs(expected["start"] - (started + 120)) < 1e-3
    for bad, fix in ((f"after:{target}+", f"give the delay in whole minutes after the +, e.g. after:{target}+5"),
                     (f"after:{target}+x", f"write e.g. after:{target}+5 for 5 minutes"),
                     (f"afterok:{target}+5", f"only after takes a delay (+MINUTES); write after:{target}+5")):
        out = run(server, "vipu", "submit", "--ipus", "1", "-d", bad)
        assert out.returncode == 2 and "-d/--dependency" in out.stderr and fix in out.stderr, out.stderr
    updated = run(server, "vipu", "update", "job", str(job), f"Dependency=after:{target}+")
    assert updated.returncode == 2 and "Dependency" in updated.stderr and "after:" in updated.stderr, updated.stderr
    assert run(server, "vipu", "cancel", str(target)).returncode == 0


def test_aftercorr_runs_each_task_after_its_peer_and_never_after_a_failed_one(server):
    [first, _] = submit(server, "--ipus", "1", "--time-limit", "1m", "--array", "0-1", "--wrap",
                        "exit $SLURM_ARRAY_TASK_ID")  # task 0 completes, task 1 fails
    paired = submit(server, "--ipus", "1", "--time-limit", "1m", "--array", "0-1", "-d", f"aftercorr:{first}",
                    "--wrap", "true")
    wait_for(lambda: show(server, paired[0])["state"] == "COMPLETED")
    never = wait_for(lambda: (d := show(server, paired[1]))["reason"] == "DependencyNeverSatisfied" and d)
    assert [show(server, first + k)["state"] for k in (0, 1)] == ["COMPLETED", "FAILED"]
    assert show(server, paired[0])["start_time"] >= show(server, first)["end_time"]
    assert never["state"] == "PENDING"
    text = run(server, "vipu", "show", "job", str(paired[1])).stdout
    assert f"Dependency=aftercorr:{first}_*(failed)\n" in text
    listed = run(server, "vipu", "queue", "-t", "PD", "--no-header", "-o", "%i|%E|%r").stdout
    assert listed.split() == [f"{paired[0]}_1|aftercorr:{first}_*(failed)|DependencyNeverSatisfied"]
    bad = run(server, "vipu", "submit", "--ipus", "1", "--array", "0-1", "-d", f"aftercorr:{first}_1")
    assert bad.returncode == 2 and f"name the array job (aftercorr:{first})" in bad.stderr, bad.stderr


def test_eligible_time_is_unknown_while_held_or_waiting_and_then_when_it_became_eligible(server):
    """scontrol's EligibleTime=Unknown for a held job and one waiting on its dependency; sacct's Eligible of the
    latter is when its dependency was met, not its submit time."""
    [target] = submit(server, "--ipus", "1", "--time-limit", "10m")  # a hold workload: runs until cancelled
    [held] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "--hold")
    [after] = submit(server, "--ipus", "1", "--time-limit", "1m", "--duration", "1s", "-d", f"afterany:{target}")
    for job in (held, after):
        assert "EligibleTime=Unknown\n" in run(server, "vipu", "show", "job", str(job)).stdout
    assert run(server, "vipu", "cancel", str(target)).returncode == 0
    wait_for(lambda: show(server, after)["state"] == "COMPLETED")
    fields = run(server, "vipu", "history", "-j", f"{target},{after}", "-o", "JobID,Submit,Eligible,Start,End", "-n",
                 "-P").stdout.split()
    rows = {int(line.split("|")[0]): line.split("|")[1:] for line in fields}
    submitted, eligible, started, _ = rows[after]
    assert submitted <= rows[target][3] <= eligible <= started  # (ISO times sort as text; a second may hold all)
    assert run(server, "vipu", "release", str(held)).returncode == 0
    assert "EligibleTime=Unknown" not in run(server, "vipu", "show", "job", str(held)).stdout
    assert run(server, "vipu", "cancel", str(held)).returncode == 0
