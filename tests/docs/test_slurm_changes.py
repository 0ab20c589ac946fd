"""Every row of docs/mapping.md's table "Slurm commands that change jobs -> vipu" (scancel, scontrol update, sbatch)
runs against a live controller and does what the row says: each row has a check below, keyed by the row's Slurm
cell, and a row without one fails. The controller runs with --secure and users alice, bob and carol (the rows speak
of owners, admins and the caller), except where a row needs programs or the open mode."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import grpc
import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for
from tests.docs.change_rows_cancel import (cancel_account, cancel_array_ids, cancel_batch, cancel_filters_alone,
                                           cancel_filters_alone_open, cancel_full, cancel_interactive, cancel_kill,
                                           cancel_me, cancel_misspelt, cancel_name, cancel_nothing, cancel_partition,
                                           cancel_qos, cancel_signal, cancel_state, cancel_user)
from tests.docs.change_rows_submit import submit_signal, submit_unmodelled
from tests.docs.change_rows_update import (submit_empty_qos, submit_missing_output, submit_test_only, update_array,
                                           submit_too_big, update_begin, update_dependency, update_durable,
                                           update_name, update_nice, update_nodes, update_priority, update_qos,
                                           update_throttle, update_time_limit, update_unlimited)
from vipu.v1 import admin_pb2 as a, admin_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
TITLE = "## Slurm commands that change jobs -> vipu"
QOS_CONFIG = "qos:\n  normal: {priority: 50, max_time_limit: 2h}\n  high: {priority: 100}\n  low: {priority: 0}\n"


def rows() -> dict[str, tuple[str, str]]:
    """Each row's Slurm cell -> its vipu and notes cells."""
    page = (ROOT / "docs/mapping.md").read_text()
    section = page.split(TITLE, 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith(("| Slurm ", "|---")):
            slurm, vipu, notes = (c.strip() for c in re.split(r"(?<!\\)\|", line)[1:4])
            out[slurm] = (vipu, notes)
    return out


class Live:
    """A controller, and the CLI as its users: `who` alice, bob, carol, admin, or None in the open mode."""

    def __init__(self, server, keys: dict[str, str]):
        self.server, self.keys = server, keys

    def env(self, who: str | None) -> dict:
        env = self.server.env()
        if who is not None:
            env["VIPU_CLI_API_ACCESS_KEY"] = self.keys[who]
        return env

    def run(self, *args: str, who: str | None = "alice") -> subprocess.CompletedProcess:
        who = who if self.keys else None
        return run(self.server, "vipu", *args, env=self.env(who))

    def ok(self, *args: str, who: str | None = "alice") -> str:
        out = self.run(*args, who=who)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    def refused(self, code: int, words: str, *args: str, who: str | None = "alice") -> None:
        out = self.run(*args, who=who)
        assert out.returncode == code and words in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)

    def submit(self, *args: str, who: str | None = "alice") -> list[int]:
        return [int(i) for i in json.loads(self.ok("submit", "--time", "5", "--json", *args, who=who))["job_ids"]]

    def show(self, job: int | str) -> dict:
        return json.loads(self.ok("show", "job", str(job), "--json", who="admin"))

    def states(self, *ids: int) -> list[str]:
        return [self.show(i)["state"] for i in ids]

    def fill(self) -> int:
        """A job holding the whole Pod64 (a hold workload: it runs till cancelled), so the others wait."""
        [big] = self.submit("--ipus", "64", who="carol" if self.keys else None)
        wait_for(lambda: self.states(big) == ["RUNNING"])
        return big


@pytest.fixture
def live(server_factory, tmp_path):
    config = tmp_path / "scheduler.yaml"
    config.write_text(QOS_CONFIG)
    server = server_factory(extra=["--secure", "--scheduler-config", str(config)])
    keys = {"admin": (server.state_dir / "admin.key").read_text().strip()}
    # the users through the API: three CLI starts a row cost more than most rows' own commands
    with grpc.insecure_channel(server.address) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        for name in ("alice", "bob", "carol"):
            keys[name] = admin.CreateUser(a.CreateUserRequest(name=name), timeout=10,
                                          metadata=(("authorization", f"Bearer {keys['admin']}"),)).access_key
    return Live(server, keys)


@pytest.fixture
def open_live(server):
    return Live(server, {})


CHECKS = {
    "`scancel 26 26_3 26_[1-4]`": cancel_array_ids,
    "`scancel -u bob`, `--user=bob`": cancel_user,
    "`scancel --me`": cancel_me,
    "`scancel -n x`, `--name`, `--jobname`": cancel_name,
    "`scancel -t PENDING`, `--state`": cancel_state,
    "`scancel -p gpu`, `--partition`": cancel_partition,
    "`scancel -q high`, `--qos`": cancel_qos,
    "`scancel -A physics`, `--account`": cancel_account,
    "`scancel -t PD` (filters, no job id)": (cancel_filters_alone, cancel_filters_alone_open),
    "`scancel` (no id, no filter)": cancel_nothing,
    "`scancel -s USR1 ID`, `--signal`": cancel_signal,
    "`scancel -s KILL ID`": cancel_kill,
    "`scancel -b -s USR1 ID`, `--batch`": cancel_batch,
    "`scancel -f -s USR1 ID`, `--full`": cancel_full,
    "`scancel -i`, `--interactive`": cancel_interactive,
    "`scancel --nmae x`": cancel_misspelt,
    "`scontrol update JobId=26 TimeLimit=30`": update_time_limit,
    "`TimeLimit=UNLIMITED`": update_unlimited,
    "`QOS=high`": update_qos,
    "`Nice=100`": update_nice,
    "`Dependency=afterok:12`": update_dependency,
    "`Name=x`, `JobName=x`": update_name,
    "`ArrayTaskThrottle=4`": update_throttle,
    "`StartTime=now+1hour`": update_begin,
    "`Priority=5000`": update_priority,
    "`NodeList=ag[00-01]` (`ReqNodeList=`), `ExcNodeList=ag03`": update_nodes,
    "`scontrol update JobId=26 ...` of an array": update_array,
    "every change": update_durable,
    "`sbatch --test-only job.sh`": submit_test_only,
    "`sbatch -N 16` on a smaller partition": submit_too_big,
    "`sbatch --qos=\"\"`": submit_empty_qos,
    "`sbatch -o missing/dir/%j.out`": submit_missing_output,
    "`sbatch --signal=[B:]SIG[@TIME]` (SBATCH_SIGNAL)": submit_signal,
    "`sbatch --comment`, `--mail-type`, `--time-min`, `--exclusive`, `-c`, `--mem`, `--mem-per-cpu`, `-n`,"
    " `--ntasks-per-node`, `--gres`, `--priority`, `--open-mode`, `--kill-on-invalid-dep`":
        submit_unmodelled,
}
RUNS = [(row, check) for row, checks in CHECKS.items()
        for check in (checks if isinstance(checks, tuple) else (checks,))]


def test_every_row_has_a_check():
    assert list(rows()) == list(CHECKS)


@pytest.mark.parametrize("row, check", RUNS, ids=[check.__name__ for _, check in RUNS])
def test_each_row_does_what_it_says(row, check, request, tmp_path):
    fixture = "open_live" if check.__code__.co_varnames[0] == "open_live" else "live"
    check(request.getfixturevalue(fixture), tmp_path)
