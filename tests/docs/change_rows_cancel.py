"""The checks of docs/mapping.md's scancel rows (tests/docs/test_slurm_changes.py runs them): each takes a Live
controller (secure, or open where it needs programs) and asserts what its row says."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_jobs_e2e import wait_for


# -- scancel ------------------------------------------------------------------------------------------------------


def cancel_array_ids(live, tmp_path):
    first, *_ = tasks = live.submit("--ipus", "4", "--array", "0-5", "--hold")
    live.ok("cancel", f"{first}_3")
    assert live.states(*tasks) == ["PENDING"] * 3 + ["CANCELLED"] + ["PENDING"] * 2
    live.ok("cancel", f"{first}_[1-2]")
    assert live.states(*tasks)[1:3] == ["CANCELLED"] * 2
    [other] = live.submit("--ipus", "4", "--hold")
    live.refused(3, "999", "cancel", "999", str(other), str(first))  # a line for the id of no job; the rest go
    assert live.states(other, *tasks) == ["CANCELLED"] * 7


def cancel_user(live, tmp_path):
    [carol] = live.submit("--ipus", "4", "--hold", who="carol")
    [bob] = live.submit("--ipus", "4", "--hold", who="bob")
    live.refused(3, f"job {carol} does not match user bob", "cancel", "-u", "bob", str(carol), who="admin")
    assert live.states(carol, bob) == ["PENDING", "PENDING"]
    live.ok("cancel", "--user=bob", who="admin")
    assert live.states(carol, bob) == ["PENDING", "CANCELLED"]


def cancel_me(live, tmp_path):
    [mine] = live.submit("--ipus", "4", "--hold", who="alice")
    [theirs] = live.submit("--ipus", "4", "--hold", who="bob")
    live.ok("cancel", "--me", who="admin")  # the admin's own: none
    assert live.states(mine, theirs) == ["PENDING", "PENDING"]
    live.ok("cancel", "--me", who="alice")
    assert live.states(mine, theirs) == ["CANCELLED", "PENDING"]


def cancel_name(live, tmp_path):
    x, y, z, w = (live.submit("--ipus", "4", "--hold", "--name", n)[0] for n in "xyzw")
    for flag, name in (("-n", "x"), ("--name", "y"), ("--jobname", "z")):
        live.ok("cancel", flag, name)
    assert live.states(x, y, z, w) == ["CANCELLED"] * 3 + ["PENDING"]
    # matched whole, as scancel's (walk22d defect 5): a comma or a leading space is part of the name
    odd = [live.submit("--ipus", "4", "--hold", "--name", n)[0] for n in ("a|b,c;d", " lead")]
    live.refused(0, "no active job matches -n 'a|b' -n 'c;d'; nothing was done", "cancel", "-n", "a|b", "-n", "c;d")
    for job, name in zip(odd, ("a|b,c;d", " lead")):
        assert live.ok("cancel", "-n", name) == f"Job {job} cancelled: CANCELLED\n"
    for flag, words in (("-n", "-n/--name"), ("-p", "-p/--partition"), ("-q", "-q/--qos"), ("-A", "-A/--account")):
        live.refused(2, f"{words} is empty", "cancel", flag, "")


def cancel_state(live, tmp_path):
    big = live.fill()
    p1, p2 = (live.submit("--ipus", "4")[0] for _ in range(2))
    live.ok("cancel", "--state", "PENDING", str(p1))
    live.refused(3, f"job {p2}", "cancel", "-t", "RUNNING", str(p2))  # a filter narrows the job named
    live.ok("cancel", "-t", "PD", who="alice")
    live.ok("cancel", "-t", "R,PD", str(big), who="carol")
    assert live.states(big, p1, p2) == ["CANCELLED"] * 3
    live.refused(2, "-t/--state COMPLETED: only active jobs can be cancelled", "cancel", "-t", "COMPLETED")


def cancel_partition(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")  # names no allocation: runs in default
    live.refused(3, f"job {job}", "cancel", "-p", "gpu", str(job))
    live.ok("cancel", "--partition", "default", str(job))
    assert live.states(job) == ["CANCELLED"]


def cancel_qos(live, tmp_path):
    [high] = live.submit("--ipus", "4", "--hold", "--qos", "high")
    [normal] = live.submit("--ipus", "4", "--hold")
    live.ok("cancel", "-q", "high")
    assert live.states(high, normal) == ["CANCELLED", "PENDING"]
    live.ok("cancel", "--qos", "normal")
    assert live.states(normal) == ["CANCELLED"]


def cancel_account(live, tmp_path):
    [physics] = live.submit("--ipus", "4", "--hold", "-A", "physics")
    [other] = live.submit("--ipus", "4", "--hold", "-A", "chemistry")
    live.ok("cancel", "-A", "physics")
    assert live.states(physics, other) == ["CANCELLED", "PENDING"]
    live.ok("cancel", "--account", "chemistry")
    assert live.states(other) == ["CANCELLED"]


def cancel_filters_alone(live, tmp_path):
    big = live.fill()
    mine, theirs = live.submit("--ipus", "4")[0], live.submit("--ipus", "4", who="bob")[0]
    live.ok("cancel", "-t", "PD", who="alice")  # --secure: a user's own
    assert live.states(big, mine, theirs) == ["RUNNING", "CANCELLED", "PENDING"]


def cancel_filters_alone_open(open_live, tmp_path):
    live = open_live
    big = live.fill()
    mine, theirs = live.submit("--ipus", "4")[0], live.submit("--ipus", "4", "--user", "bob")[0]
    live.ok("cancel", "-t", "PD")  # without --secure: everyone's
    assert live.states(big, mine, theirs) == ["RUNNING", "CANCELLED", "CANCELLED"]


def cancel_nothing(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    live.refused(2, "name job ids, or choose jobs with filters", "cancel")
    assert live.states(job) == ["PENDING"]


def trap_script(tmp_path) -> tuple[Path, Path]:
    """A script that traps USR1 and runs a child that traps it too, each saying so."""
    script, output = tmp_path / "trap.sh", tmp_path / "trap.out"
    script.write_text("#!/bin/bash\ntrap 'echo script got USR1' USR1\npython3 -u -c 'import signal, time\n"
                      "signal.signal(signal.SIGUSR1, lambda *_: print(\"child got USR1\", flush=True))\n"
                      "print(\"ready\", flush=True)\nwhile True: time.sleep(1)' &\nchild=$!\n"
                      "while kill -0 $child 2>/dev/null; do wait $child; done\n")
    return script, output


def cancel_signal(open_live, tmp_path):
    live = open_live
    script, output = trap_script(tmp_path)
    [job] = live.submit("--ipus", "1", "-D", str(tmp_path), "-o", str(output), str(script))  # its folder: allowed
    [sleeper] = live.submit("--ipus", "1", "--duration", "10m")
    wait_for(lambda: output.exists() and "ready" in output.read_text() and live.states(sleeper) == ["RUNNING"],
             timeout=90)
    for signal in ("USR1", "SIGUSR1", "10"):  # names, SIG names, numbers
        before = output.read_text().count("got USR1")
        assert live.ok("cancel", "-s", signal, str(job)) == f"Job {job} signalled (SIGUSR1): RUNNING\n"
        wait_for(lambda: output.read_text().count("got USR1") > before, timeout=60)
    assert live.states(job) == ["RUNNING"]  # the trap caught it: the job goes on
    live.refused(4, "runs a sleep workload", "cancel", "-s", "USR1", str(sleeper))
    [held] = live.submit("--ipus", "1", "--hold", str(script))
    live.refused(4, "only a running job's program can be signalled", "cancel", "-s", "USR1", str(held))
    out = live.ok("cancel", "--signal", "USR1", "-t", "R")  # filters alone: only running programs
    assert out == f"Job {job} signalled (SIGUSR1): RUNNING\n"
    assert live.states(sleeper, held) == ["RUNNING", "PENDING"]
    live.refused(2, "signals are 1 to 64", "cancel", "-s", "65", str(job))


def running_trap(live, tmp_path) -> tuple[int, Path]:
    script, output = trap_script(tmp_path)
    [job] = live.submit("--ipus", "1", "-D", str(tmp_path), "-o", str(output), str(script))
    wait_for(lambda: output.exists() and "ready" in output.read_text(), timeout=90)
    return job, output


def cancel_batch(open_live, tmp_path):
    """-b: the script alone (its trap forwards it, as a user's would); then the default: its child alone."""
    live = open_live
    job, output = running_trap(live, tmp_path)
    live.ok("cancel", "-b", "-s", "USR1", str(job))
    wait_for(lambda: "script got USR1" in output.read_text(), timeout=60)
    live.ok("cancel", "-s", "USR1", str(job))
    wait_for(lambda: "child got USR1" in output.read_text(), timeout=60)
    live.ok("cancel", str(job))
    wait_for(lambda: live.states(job) == ["CANCELLED"], timeout=60)
    *lines, stepd = output.read_text().splitlines()  # then the cancel, as slurmstepd says it
    assert lines[1:] == ["script got USR1", "child got USR1"] and " CANCELLED AT " in stepd  # one each, no more
    x, y = (live.submit("--ipus", "1", "--hold")[0] for _ in range(2))
    live.ok("cancel", "--batch", str(x))  # without -s: a cancel
    live.ok("cancel", "-f", str(y))
    assert live.states(x, y) == ["CANCELLED", "CANCELLED"]


def cancel_full(open_live, tmp_path):
    live = open_live
    job, output = running_trap(live, tmp_path)
    live.ok("cancel", "-f", "-b", "-s", "USR1", str(job))  # -b ignored
    wait_for(lambda: {"script got USR1", "child got USR1"} <= set(output.read_text().splitlines()), timeout=60)
    assert live.states(job) == ["RUNNING"]


def cancel_kill(live, tmp_path):
    [running] = live.submit("--ipus", "1", "--duration", "10m")
    [held] = live.submit("--ipus", "1", "--hold")
    wait_for(lambda: live.states(running) == ["RUNNING"])
    assert live.ok("cancel", "-s", "KILL", str(running)) == f"Job {running} cancelled: CANCELLED\n"
    assert live.ok("cancel", "-s", "9", str(held)) == f"Job {held} cancelled: CANCELLED\n"


def cancel_interactive(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold")
    for flag in ("-i", "--interactive"):
        live.refused(2, f"No such option: {flag}", "cancel", flag, str(job))
    assert live.states(job) == ["PENDING"]


def cancel_misspelt(live, tmp_path):
    [job] = live.submit("--ipus", "4", "--hold", "--name", "x")
    live.refused(2, "No such option: --nmae", "cancel", "--nmae", "x")
    assert live.states(job) == ["PENDING"]
