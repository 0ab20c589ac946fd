"""Every row of docs/mapping.md's "Times" table against a live controller: each spelling typed where the row says
(the flag, a batch script's #SBATCH line, `vipu update job`, a spec file, a trace) means what the row says. A row
without a check fails."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import run
from tests.conftest import ServerProcess, console_script
from vipu.client import Client
from vipu.client.messages import seconds
from vipu.scheduler.begin import begin_time, parse_begin

ROOT = Path(__file__).resolve().parents[2]
TITLE = "## Times"
YEAR = 366 * 86400  # the controller's longest limit, UNLIMITED's under a QOS without max_time_limit


def rows() -> list[str]:
    page = (ROOT / "docs/mapping.md").read_text()
    section = page.split(TITLE, 1)[1].split("\n## ", 1)[0]
    return [re.split(r"(?<!\\)\|", line)[1].strip() for line in section.splitlines()
            if line.startswith("| `")]


class Times:
    """One controller (bow-pod16, --ray off), the CLI to type into and the client to read jobs back."""

    def __init__(self, server: ServerProcess, folder: Path):
        self.server, self.folder = server, folder
        self.client = Client.connect("127.0.0.1", server.port, timeout=10)

    def vipu(self, *args: str) -> subprocess.CompletedProcess:
        return run(self.server, "vipu", *args)

    def submit(self, *args: str) -> int:
        out = self.vipu("submit", "--ipus", "1", "--hold", "--json", *args)
        assert out.returncode == 0, (args, out.stderr)
        return int(json.loads(out.stdout)["job_ids"][0])

    def script(self, *directives: str) -> int:
        path = self.folder / "job.sh"
        path.write_text("#!/bin/sh\n" + "".join(f"#SBATCH {d}\n" for d in ("--ipus=1", "-H", *directives)) + "true\n")
        return self.submit(str(path))

    def spec(self, text: str) -> int:
        path = self.folder / "job.yaml"
        path.write_text(text)
        return self.submit(str(path))

    def update(self, job: int, pair: str) -> None:
        out = self.vipu("update", "job", str(job), pair)
        assert out.returncode == 0, (pair, out.stderr)

    def limit(self, job: int) -> float:
        return seconds(self.client.job(job).time_limit)

    def begin(self, job: int) -> float:
        return seconds(self.client.job(job).begin)


@pytest.fixture(scope="module")
def times(tmp_path_factory):
    folder = tmp_path_factory.mktemp("times")
    server = ServerProcess(state_dir=folder / "state", pod="bow-pod16")
    server.start()
    try:
        yield Times(server, folder)
    finally:
        server.kill()
        server.proc.stdout.close()


def slurm_limits(times: Times, cases: dict[str, float]) -> None:
    job = times.submit("-t", "1")
    for text, want in cases.items():
        assert times.limit(times.submit("-t", text)) == want, text
        assert times.limit(times.script(f"-t {text}")) == want, text
        times.update(job, "TimeLimit=1")
        times.update(job, f"TimeLimit={text}")
        assert times.limit(job) == want, text


def slurm_time(times):
    slurm_limits(times, {"90": 5400, "5:30": 330, "02:30:00": 9000, "1-12": 129600, "1-00:00:00": 86400})


def seconds_kept(times):
    slurm_limits(times, {"0:20": 20, "1:30": 90})  # kept to the second, where Slurm rounds up to a minute
    job = times.submit("--time-limit", "20s")
    times.vipu("cancel", str(job))  # ended: a row of its own in the history
    shown = times.vipu("history", "-n", "-P", "-j", str(job), "-o", "Timelimit,TimelimitRaw")
    assert shown.stdout == "00:00:20|0.33\n", shown.stderr


def unlimited(times):
    slurm_limits(times, {"UNLIMITED": YEAR, "INFINITE": YEAR, "0": YEAR})


def with_units(times):
    for text, want in {"90s": 90, "10m": 600, "1h30m": 5400, "2d": 172800, "02:30:00": 9000}.items():
        assert times.limit(times.submit("--time-limit", text)) == want, text
        job = times.submit("--duration", text)
        assert times.client.job(job).spec.workload.sleep.duration.seconds == want, text
        assert times.limit(times.spec(f"ipus: 1\ntime_limit: '{text}'\n")) == want, text
    for args in (["--time-limit", "90"], ["--duration", "90"]):
        out = times.vipu("submit", "--ipus", "1", *args)
        assert out.returncode == 2 and "write 90s for seconds or 90m for minutes" in out.stderr, out.stderr


def bare_number(times):
    assert times.limit(times.spec("ipus: 1\ntime_limit: 90\n")) == 90
    trace = times.folder / "trace.csv"
    trace.write_text("submit_time,ipus,duration\n0,4,90\n")
    rows_out = times.folder / "jobs.jsonl"
    out = subprocess.run([console_script("vipu"), "simulate", "--trace", str(trace), "--pod", "bow-pod16",
                          "--policy", "fifo", "--jobs-out", str(rows_out)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    [row] = [json.loads(line) for line in rows_out.read_text().splitlines()]
    assert row["run_time_s"] == 90


def begins(times: Times, words: list[str]) -> None:
    """Each word as --begin, #SBATCH --begin and StartTime= gives the begin the controller's reading of it gives
    (the same module, the same local time), and an update never a time past (StartTime in the past: now)."""
    job = times.submit("--begin", "now+1hour")
    for word in words:
        now = time.time()
        read = parse_begin(word)
        want = begin_time(read, now)
        slack = 30 if str(read).startswith("now") else 0  # a delay from the moment of the call (today is now)
        for submitted in (times.submit("--begin", word), times.script(f"--begin={word}")):
            assert times.begin(submitted) == pytest.approx(want, abs=slack), word
        times.update(job, f"StartTime={word}")
        assert times.begin(job) == pytest.approx(max(want, now), abs=max(slack, 60)), word


def times_of_day(times):
    begins(times, ["16:00", "4:30pm", "midnight", "noon", "teatime", "today", "tomorrow"])
    later = [times.begin(times.submit("--begin", w)) for w in ("16:00", "tomorrow")]
    assert all(t > time.time() for t in later)  # the next such moment


def dates(times):
    begins(times, ["11/22", "11/22/26-16:00", "11.22", "1122", "112226"])


def iso_times(times):
    begins(times, ["2026-11-22T16:00", "2026-11-22T16:00Z"])


def delays(times):
    begins(times, ["now+90", "now+10minutes", "now+1h30m", "now-1hour"])
    assert times.begin(times.submit("--begin", "now+90")) == pytest.approx(time.time() + 90, abs=30)


CHECKS = {
    "`90`, `5:30`, `02:30:00`, `1-12`, `1-00:00:00`": slurm_time,
    "`0:20`, `1:30` (seconds in a limit)": seconds_kept,
    "`UNLIMITED`, `INFINITE`, `0`": unlimited,
    "`90s`, `10m`, `1h30m`, `2d`, `02:30:00`": with_units,
    "`90` (a number)": bare_number,
    "`16:00`, `4:30pm`, `midnight`, `noon`, `teatime`, `today`, `tomorrow`": times_of_day,
    "`11/22`, `11/22/26-16:00`, `11.22`, `1122`, `112226`": dates,
    "`2026-11-22T16:00`, `2026-11-22T16:00Z`": iso_times,
    "`now+90`, `now+10minutes`, `now+1h30m`, `now-1hour`": delays,
}


def test_every_row_has_a_check():
    assert rows() == list(CHECKS)


@pytest.mark.parametrize("row", list(CHECKS), ids=[c.__name__ for c in CHECKS.values()])
def test_each_row_means_what_it_says(row, times):
    CHECKS[row](times)
