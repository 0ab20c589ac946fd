"""One policy file, live and in replay: examples/policies/smallest_first.py runs a real vipu-server's queue and a
replay of the same jobs, and both start the same jobs on the same blocks at the same (relative) times; a policy
file that raises never takes the controller down."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for
from vipu.replay.measures import from_history
from vipu.replay.simulation import simulate_trace

ROOT = Path(__file__).resolve().parents[2]
SMALLEST_FIRST = str(ROOT / "examples/policies/smallest_first.py")
# (name, IPUs, run seconds), all submitted at once on a Pod16: smallest first starts c, d and a at once (16 IPUs)
# and b when they have all ended; backfill's priority (job size) would start b first
JOBS = [("a", 8, 3), ("b", 16, 1), ("c", 4, 1), ("d", 4, 2)]


def starts(rows) -> dict[str, tuple[float, int]]:
    """name -> (start relative to the first start, first IPU)."""
    first = min(r.start_time for r in rows)
    return {r.name: (r.start_time - first, r.first_ipu) for r in rows}


def test_the_same_policy_file_starts_the_same_jobs_live_and_in_replay(server_factory, tmp_path):
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit_time,ipus,duration,time_limit,name\n"
                     + "".join(f"0,{ipus},{run_s},60,{name}\n" for name, ipus, run_s in JOBS))
    sim = simulate_trace(str(trace), "bow-pod16", [], policy_files=[SMALLEST_FIRST])
    replayed = starts(sim.runs[0][0].jobs)
    assert sim.results[0].policy == "smallest_first" and replayed == {
        "c": (0, 0), "d": (0, 4), "a": (0, 8), "b": (3, 0)}

    server = server_factory(pod="bow-pod16", extra=["--policy-file", SMALLEST_FIRST])
    specs = []
    for name, ipus, run_s in JOBS:
        spec = tmp_path / f"{name}.yaml"
        spec.write_text(f"name: {name}\nipus: {ipus}\ntime_limit: 1m\nworkload: {{kind: sleep, duration: {run_s}s}}\n")
        specs.append(str(spec))
    assert run(server, "vipu", "submit", *specs).returncode == 0  # one call: one cycle sees all four
    history = wait_for(lambda: (lambda h: h if len(h) == 4 else None)(
        json.loads(run(server, "vipu", "history", "--json", "-s", "CD").stdout)), timeout=30)  # all four ended
    live = starts([from_history(record) for record in history])
    assert {name: ipu for name, (_, ipu) in live.items()} == {name: ipu for name, (_, ipu) in replayed.items()}
    for name, (at, _) in replayed.items():
        assert abs(live[name][0] - at) < 0.5, (name, live, replayed)  # wall-clock jitter of the live loop
    assert "vipu_scheduler_policy_fallbacks_total 0.0" in metrics(server)


def metrics(server) -> str:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as reply:
        return reply.read().decode()


def test_a_policy_that_raises_live_falls_back_and_the_controller_stays_up(server_factory, tmp_path):
    failing = tmp_path / "flaky.py"
    failing.write_text('ORDER = "submit"\n\n\ndef schedule(request):\n'
                       '    if any(job.ipus == 16 for job in request.pending):\n'
                       '        raise RuntimeError("no 16-IPU jobs here")\n'
                       '    from vipu.scheduler.policies import engine\n'
                       '    return engine.run(request, request.pending, "strict")\n')
    server = server_factory(pod="bow-pod16", extra=["--policy-file", str(failing)])
    spec = tmp_path / "big.yaml"
    spec.write_text("name: big\nipus: 16\ntime_limit: 1m\nworkload: {kind: sleep, duration: 0.2s}\n")
    assert run(server, "vipu", "submit", str(spec)).returncode == 0
    # the built-in policy (backfill) decided the cycles the file failed: the job ran all the same
    wait_for(lambda: json.loads(run(server, "vipu", "history", "--json").stdout), timeout=30)
    fallbacks = [line for line in metrics(server).splitlines() if line.startswith("vipu_scheduler_policy_fallbacks")]
    assert fallbacks and float(fallbacks[0].split()[-1]) >= 1
    assert server.proc.poll() is None and run(server, "vipu", "info").returncode == 0


def test_a_bad_policy_file_is_refused_at_start_with_its_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("ORDER = 'submit'\ndef schedule(request):\n    return (\n")
    out = run(None, "vipu-server", "--pod", "bow-pod16", "--ray", "off", "--port", "0", "--metrics-port", "-1",
              "--state-dir", str(tmp_path / "state"), "--policy-file", str(bad), env=dict(os.environ))
    assert out.returncode == 2 and out.stderr.startswith(f"vipu-server: error: --policy-file {bad}:3: SyntaxError")
