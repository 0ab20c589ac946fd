"""Shell completion in a real bash: the script `vipu completion bash` prints, loaded as README says, completes
commands, flags and the caller's job ids from a real controller."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, wait_for
from tests.conftest import console_script


def complete(server, prog: str, *words: str) -> list[str]:
    """What bash offers after `prog words...` (the last word is the one being completed; bash splits a word at =,
    so `TimeLimit=30` is given as "TimeLimit", "=", "30")."""
    env = {**server.env(), "PATH": f"{Path(console_script(prog)).parent}{os.pathsep}{os.environ['PATH']}"}
    line = " ".join(f'"{w}"' for w in (prog, *words))
    bash = (f'{script(prog, env)}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)};'
            f' _{prog.replace("-", "_")}_completion {prog}; printf "%s\\n" "${{COMPREPLY[@]}}"')
    out = subprocess.run(["bash", "-c", bash], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return [w for w in out.stdout.splitlines() if w]


@functools.cache
def _script(prog: str, path: str) -> str:
    out = subprocess.run([prog, "completion", "bash"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": path})
    assert out.returncode == 0, out.stderr
    return out.stdout


def script(prog: str, env: dict[str, str]) -> str:
    """What `prog completion bash` prints (the same for every controller: made once a session, not once a Tab)."""
    return _script(prog, env["PATH"])


def submit_held(server, *args: str) -> str:
    out = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_bash_completes_commands_flags_and_my_job_ids(server):
    assert "cancel" in complete(server, "vipu", "ca")
    assert {"--user", "--help"} <= set(complete(server, "vipu", "cancel", "--"))
    mine = submit_held(server)
    array = submit_held(server, "--array", "0-1")
    theirs = run(server, "vipu", "--api-user-id", "someone-else", "submit", "--ipus", "1", "--hold", "--parsable")
    offered = complete(server, "vipu", "cancel", "")
    assert {mine, array, f"{array}_0", f"{array}_1"} <= set(offered)
    assert offered.count(array) == 1 and str(int(array) + 1) not in offered  # 28_1's own id is 29: not again
    assert theirs.stdout.strip() not in offered  # only the caller's own jobs
    # -u offers the users with jobs queued (walk22c: queue -u, cancel -u, priority -u offered nothing)
    for command in ("queue", "cancel", "priority"):
        assert "someone-else" in complete(server, "vipu", command, "-u", ""), command
    assert complete(server, "vipu", "queue", "-u", "someone-else,some") == []  # not twice in a comma list
    # submit -d: the kinds, then the caller's job ids after one, ':' between them
    assert complete(server, "vipu", "submit", "-d", "afte") == ["after:", "afterany:", "aftercorr:", "afterok:", "afternotok:"]
    # bash splits the word at ':' (COMP_WORDBREAKS): the script joins it again and completes the part after it
    assert complete(server, "vipu", "submit", "-d", "afterok", ":", "") == [mine, array, f"{array}_0", f"{array}_1"]
    assert mine not in complete(server, "vipu", "submit", "-d", "afterok", ":", mine, ":", "")
    assert complete(server, "vipu", "submit", "-d", f"afterok", ":", f"{mine},afterany", ":", f"{array}_") == [
        f"{array}_0", f"{array}_1"]
    assert f"afterok:{mine}" in complete(server, "vipu", "submit", "-d", "afterok:")  # ':' not a word break
    assert complete(server, "vipu", "submit", "-b", "16", ":", "") == []  # other values: nothing, no error
    # queue -S: field letters, with their sign; -O: field names
    assert {"t,-i", "t,-p"} <= set(complete(server, "vipu", "queue", "-S", "t,-"))
    assert complete(server, "vipu", "queue", "-O", "JobID,Us") == ["JobID,UserName"]
    assert complete(server, "vipu", "show", "job", mine[:-1]) and mine in complete(server, "vipu", "logs", mine)
    assert "create" in complete(server, "vipu-admin", "cr")


def test_bash_completes_the_values_of_options_and_hold_and_release_offer_only_what_they_take(server):
    """Walk of issue 22: `vipu queue -j <Tab>`, `-t <Tab>` and `vipu submit -q <Tab>` offered nothing, and `vipu
    hold <Tab>` offered jobs it refuses."""
    held = submit_held(server)
    out = run(server, "vipu", "submit", "--ipus", "1", "--begin", "now+1hour", "--parsable")
    waiting = out.stdout.strip()
    assert complete(server, "vipu", "hold", "") == [waiting] and complete(server, "vipu", "release", "") == [held]
    # only what each command takes: priority a pending job not held, requeue no pending job, cancel -t active states
    assert complete(server, "vipu", "priority", "-j", "") == [waiting] == complete(server, "vipu", "priority", "")
    assert complete(server, "vipu", "requeue", "") == []
    assert complete(server, "vipu", "cancel", "-t", "") == ["PENDING", "RUNNING"]
    assert complete(server, "vipu", "cancel", "-s", "USR") == ["USR1", "USR2"]
    assert complete(server, "vipu", "cancel", "--signal", "SIGTE") == ["SIGTERM"]
    done = run(server, "vipu", "submit", "--ipus", "1", "--duration", "0.1s", "--parsable").stdout.strip()
    wait_for(lambda: show(server, int(done))["state"] == "COMPLETED")
    assert complete(server, "vipu", "requeue", "") == [done]
    assert set(complete(server, "vipu", "queue", "-j", "")) == {held, waiting}
    assert complete(server, "vipu", "queue", "--jobs", f"{held},") == [f"{held},{waiting}"]  # a comma list
    assert run(server, "vipu", "cancel", waiting).returncode == 0
    assert complete(server, "vipu", "queue", "-j", "") == [held]
    assert set(complete(server, "vipu", "history", "-j", "")) == {held, waiting, done}  # ended jobs too
    assert complete(server, "vipu", "queue", "-t", "PE") == ["PENDING"]
    assert set(complete(server, "vipu", "history", "-s", "running,c")) == {
        "running,COMPLETING", "running,COMPLETED", "running,CANCELLED"}
    assert complete(server, "vipu", "submit", "-q", "") == ["high", "low", "normal"]
    # walk22d: logs and show job offer ended jobs too; -d offers only jobs that can still meet the dependency
    assert {held, waiting, done} <= set(complete(server, "vipu", "logs", ""))
    assert {held, waiting, done} <= set(complete(server, "vipu", "show", "job", ""))
    assert set(complete(server, "vipu", "submit", "-d", "afterok:")) == {f"afterok:{held}", f"afterok:{done}"}
    assert set(complete(server, "vipu", "submit", "-d", "afternotok:")) == {f"afternotok:{held}",
                                                                             f"afternotok:{waiting}"}
    assert complete(server, "vipu", "history", "-o", "JobID,Sta") == ["JobID,Start", "JobID,State"]
    assert complete(server, "vipu", "cancel", "-n", "") == [show(server, int(held))["name"]]
    assert complete(server, "vipu", "submit", "-p", "") == ["default"] == complete(server, "vipu", "cancel", "-p", "")


def test_bash_completes_partition_names_and_nothing_when_the_controller_is_gone(server):
    assert run(server, "vipu", "create", "partition", "p-one", "--size", "1").returncode == 0
    assert complete(server, "vipu", "get", "partition", "p-") == ["p-one"]
    server.kill()
    assert complete(server, "vipu", "cancel", "") == []  # within the half-second deadline, no error printed


def test_completion_of_an_unknown_shell_is_refused(server):
    out = run(server, "vipu", "completion", "fish")
    assert out.returncode == 2 and "give bash or zsh" in out.stderr
    zsh = run(server, "vipu-admin", "completion", "zsh").stdout
    assert zsh.startswith("#compdef vipu-admin") and "_VIPU_ADMIN_COMPLETE=complete_zsh" in zsh


def test_bash_completes_update_job_its_ids_and_the_fields_not_given_yet(server):
    mine = submit_held(server)
    array = submit_held(server, "--array", "0-1")
    assert complete(server, "vipu", "update", "") == ["job", "JobId="]
    assert complete(server, "vipu", "update", "job", "") == [mine, array, f"{array}_0", f"{array}_1"]
    fields = ["TimeLimit=", "QOS=", "Nice=", "Dependency=", "Name=", "ArrayTaskThrottle=", "StartTime=", "Priority="]
    assert complete(server, "vipu", "update", "job", mine, "") == fields
    assert complete(server, "vipu", "update", "job", mine, "TimeLimit", "=", "30", "") == fields[1:]
    assert complete(server, "vipu", "update", "job", mine, "ti") == ["TimeLimit="]  # any case, as scontrol's
    assert complete(server, "vipu", "update", "JobId", "=", "") == [mine, array, f"{array}_0", f"{array}_1"]
    assert complete(server, "vipu", "update", "JobId", "=", mine, "qo") == ["QOS="]
    assert complete(server, "vipu", "update", "job", mine, "QOS", "=", "") == ["high", "low", "normal"]
    assert complete(server, "vipu", "update", "job", mine, "Nice", "=", "") == []  # a number is the user's
    assert complete(server, "vipu", "update", "job", mine, "--qos", "h") == ["high"]
    assert "compopt -o nospace" in run(server, "vipu", "completion", "bash").stdout  # TimeLimit=30, not "= 30"


def zsh_offers(server, *words: str) -> list[str]:
    """The lines `vipu` answers zsh's completion with: _arguments and one quoted completion a line."""
    env = {**server.env(), "_VIPU_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": " ".join(("vipu", *words))}
    out = subprocess.run([console_script("vipu")], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_zsh_completions_are_one_line_each_with_their_descriptions(server):
    mine = submit_held(server)
    lines = zsh_offers(server, "queue", "-")  # flags whose help typer wraps over several lines
    assert lines[0].startswith("_arguments '*: :((") and lines[-1].endswith("))'")
    items = [line.removeprefix("_arguments '*: :((").removesuffix("))'") for line in lines]
    assert all(item.startswith('"-') and item.endswith('"') and '":"' in item for item in items), lines
    assert any("Slurm''s MinJobAge" in item for item in items)  # the help that was broken before MinJobAge
    assert zsh_offers(server, "update", "JobId=") == [f"_arguments '*: :((\"JobId={mine}\"))'"]
    assert zsh_offers(server, "update", "job", mine, "Na") == ["_arguments '*: :((\"Name=\"))'"]
    assert zsh_offers(server, "update", "job", mine, "qos=h") == ["_arguments '*: :((\"qos=high\"))'"]
    # the same completer as bash's; zsh's _arguments wants the ':' escaped
    assert zsh_offers(server, "submit", "-d", "afterok:") == [f"_arguments '*: :((\"afterok\\\\:{mine}\"))'"]
    script = run(server, "vipu", "completion", "zsh").stdout
    assert script.startswith("#compdef vipu") and "compdef _vipu_completion vipu" in script
    if shutil.which("zsh"):  # not installed everywhere: its syntax check where it is
        check = subprocess.run(["zsh", "-n"], input=script, capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stderr


def test_a_dependency_is_offered_only_jobs_that_can_still_meet_it():
    from google.protobuf.timestamp_pb2 import Timestamp

    from vipu.cli.completion import can_satisfy
    from vipu.v1 import job_pb2 as j

    def ended(job: int, state: str, ago: float) -> j.Job:
        stamp = Timestamp()
        stamp.FromNanoseconds(int((time.time() - ago) * 1e9))
        return j.Job(id=job, state=state, ended=stamp)

    jobs = [j.Job(id=1, state="PENDING"), j.Job(id=2, state="RUNNING"), ended(3, "COMPLETED", 10),
            ended(4, "FAILED", 10), ended(5, "COMPLETED", 3600), ended(6, "CANCELLED", 3600)]
    assert [x.id for x in can_satisfy(jobs, "afterok")] == [1, 2, 3]
    assert [x.id for x in can_satisfy(jobs, "afternotok")] == [1, 2, 4]
    assert [x.id for x in can_satisfy(jobs, "afterany")] == [1, 2, 3, 4]  # long ended: not in the queue any more
