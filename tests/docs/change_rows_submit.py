"""Checks of docs/mapping.md's sbatch rows that tests/docs/test_slurm_changes.py runs (the other sbatch rows':
change_rows_update.py)."""

from __future__ import annotations

import json

from tests.cli.test_jobs_e2e import wait_for


def submit_unmodelled(open_live, tmp_path):
    live = open_live
    out = live.run("submit", "--ipus", "1", "-H", "--comment", "x", "--mail-type", "END", "--time-min", "5",
                   "--exclusive", "--kill-on-invalid-dep=no", "-n", "1", "-c", "4", "--mem", "10G", "--mem-per-cpu",
                   "1G", "--json")
    assert out.returncode == 0 and out.stderr.count("vipu: warning:") == 6, out.stderr  # a line for each of six
    [job] = json.loads(out.stdout)["job_ids"]
    assert live.show(job)["spec"]["hold"] is True and live.show(job)["spec"]["comment"] == "x"  # --comment: kept
    for flags, said in ((["--priority", "9"], "--priority is not taken"),
                        (["--signal=B:USR1@60"], "--signal is for a batch script or --wrap"),
                        (["--open-mode=append"], "--open-mode is for a batch script"),
                        (["--kill-on-invalid-dep=yes"], "--kill-on-invalid-dep=yes is not taken"),
                        (["-n", "4"], "-n/--ntasks=4 is not taken"), (["--gres=ipu:4"], "--gres is not taken"),
                        (["--ntasks-per-node=2"], "--ntasks-per-node=2 is not taken"),
                        (["--mem=lots"], "--mem=lots is not a size"),
                        (["-c", "0"], "--cpus-per-task=0 is not a count")):
        live.refused(2, said, "submit", "--ipus", "1", *flags)
    assert [x["job_id"] for x in json.loads(live.ok("queue", "--json"))["jobs"]] == [job]  # nothing more queued


def submit_signal(open_live, tmp_path):
    """B:USR1 4 s into a 30-second limit: the script's trap runs, it exits, COMPLETED before the limit. The 4 s give
    bash time to set its trap on a loaded machine; a second was too short."""
    live = open_live
    [job] = live.submit("--ipus", "1", "-t", "0:30", "--signal", "B:USR1@26", "-D", str(tmp_path), "--wrap",
                        "trap 'echo warned; exit 0' USR1; while :; do sleep 0.05; done")
    detail = wait_for(lambda: (d := live.show(job))["state"] in ("COMPLETED", "FAILED", "TIMEOUT") and d, timeout=60)
    assert detail["state"] == "COMPLETED" and (tmp_path / f"slurm-{job}.out").read_text() == "warned\n"
    live.refused(2, "R: lets a job overlap a reservation", "submit", "--ipus", "1", "--signal", "R:USR1", "--wrap",
                 "true")
