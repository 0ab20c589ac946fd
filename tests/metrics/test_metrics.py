"""The controller's /metrics, linted by promtool and scraped by a real Prometheus (installed by the project)."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.cli.test_jobs_e2e import submit, wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def prometheus_bin() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts/install_prometheus.sh")], capture_output=True, text=True,
                         timeout=600, check=True)
    return ROOT / out.stdout.strip().splitlines()[-1]


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode()


def busy(server) -> None:
    [done] = submit(server, "--ipus", "4", "--time-limit", "1m", "--duration", "0.2s")
    submit(server, "--ipus", "16", "--time-limit", "10m")
    submit(server, "--ipus", "64", "--time-limit", "10m")
    wait_for(lambda: "vipu_job_completions_total{state=\"COMPLETED\"} 1.0" in scrape(server.metrics_url))


def test_metrics_cover_state_and_pass_promtool(server, prometheus_bin):
    busy(server)
    text = scrape(server.metrics_url)
    for line in [
        'vipu_ipus{ild="0",state="allocated"} 16.0',
        'vipu_jobs{state="RUNNING"} 1.0',
        'vipu_jobs{state="PENDING"} 1.0',
        'vipu_jobs_startable 0.0',  # the 64-IPU job waits for the 16 allocated: busy, not stuck
        'vipu_jobs{state="COMPLETED"} 1.0',
        'vipu_partitions{state="ACTIVE"} 1.0',
        'vipu_job_submissions_total 3.0',
        'vipu_job_starts_total 2.0',
        'vipu_pod_info{ilds="1",ipus="64",pod="bow-pod64"} 1.0',
        'vipu_machine_info{ild="0",machine="7",node="ag07"} 1.0',  # the node name for a join on machine
    ]:
        assert line in text, line
    # job 2's 16 IPUs, wherever they are: 0-15 if job 1 had ended when it started, 16-31 if not
    held = [line for line in text.splitlines() if line.startswith("vipu_ipu_allocation_info{") and 'job_id="2"' in line]
    assert len(held) == 16 and all('partition="slurm_2"' in line and line.endswith("} 1.0") for line in held), held
    submits = 'grpc_method="SubmitJob",grpc_service="vipu.v1.JobService",grpc_type="unary"'
    assert f'grpc_server_started_total{{{submits}}} 3.0' in text
    assert f'grpc_server_handled_total{{grpc_code="OK",{submits}}} 3.0' in text
    assert "vipu_scheduler_cycle_seconds_bucket" in text and "vipu_job_queue_wait_seconds_count 2.0" in text
    lint = subprocess.run([str(prometheus_bin / "promtool"), "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_grpc_failures_are_counted_by_code(server):
    from tests.cli.test_cli_e2e import run

    assert run(server, "vipu", "get", "partition", "ghost").returncode == 3
    text = scrape(server.metrics_url)
    get = 'grpc_method="GetPartition",grpc_service="vipu.v1.PartitionService",grpc_type="unary"'
    assert f'grpc_server_handled_total{{grpc_code="NOT_FOUND",{get}}} 1.0' in text
    # and their latency apart from the successes' (issue 6: "latency by method and status code")
    latency = "grpc_server_handling_seconds_count"
    assert f'{latency}{{grpc_code="NOT_FOUND",{get}}} 1.0' in text
    assert f'{latency}{{grpc_code="OK",{get}}}' not in text


def test_the_process_its_build_and_its_store_are_exported_without_created_series(server):
    """process_* as every Prometheus client exports them, vipu_build_info as prometheus_build_info is, the store's
    writes (the alerts VipuStoreNotWritable and VipuStoreWriteFailures), and no `_created` lines (they doubled the
    counters' and histograms' series)."""
    import platform
    import re

    import ray

    from vipu import __version__

    text = scrape(server.metrics_url)
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                 "process_start_time_seconds"):
        assert re.search(rf"^{name} \S+$", text, re.M), name
    [info] = re.findall(r"^vipu_build_info\{(.*)\} 1\.0$", text, re.M)
    labels = dict(re.findall(r'(\w+)="([^"]*)"', info))
    assert labels["version"] == __version__ and labels["ray_version"] == ray.__version__
    assert labels["python_version"] == platform.python_version()
    assert re.fullmatch(r"[0-9a-f]{12}|unknown", labels["revision"]), labels
    assert "vipu_store_writable 1.0" in text and "vipu_store_write_failures_total 0.0" in text
    assert "_created" not in text


def test_rules_and_config_pass_promtool(prometheus_bin):
    promtool = str(prometheus_bin / "promtool")
    for args in (["check", "config", "deploy/prometheus/prometheus.yml"],
                 ["test", "rules", "deploy/prometheus/tests/vipu.rules.test.yml"]):
        out = subprocess.run([promtool, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture
def scrape_interval() -> str:
    return "1s"


@pytest.fixture
def prometheus(prometheus_bin, server, tmp_path, scrape_interval):
    target = server.metrics_url.removeprefix("http://").removesuffix("/metrics")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        (ROOT / "deploy/prometheus/prometheus.yml").read_text().replace("127.0.0.1:9105", target)
        .replace("vipu.rules.yml", str(ROOT / "deploy/prometheus/vipu.rules.yml"))
        .replace("scrape_interval: 5s", f"scrape_interval: {scrape_interval}")
        .replace("evaluation_interval: 5s", "evaluation_interval: 1s")
    )
    proc = subprocess.Popen(
        [str(prometheus_bin / "prometheus"), f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         "--web.listen-address=127.0.0.1:0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    address = wait_for(lambda: _listening(proc), timeout=30)
    yield f"http://{address}"
    proc.terminate()
    proc.wait(timeout=20)


def _listening(proc) -> str | None:
    line = proc.stderr.readline()
    if "Listening on" in line and "address=" in line:  # msg="Listening on" address=127.0.0.1:NNNN
        return line.split("address=")[1].split()[0]
    return None


def query(base: str, expr: str) -> list:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as reply:
        body = json.loads(reply.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def test_a_real_prometheus_scrapes_the_controller(server, prometheus):
    busy(server)
    wait_for(lambda: query(prometheus, 'vipu_jobs{state="COMPLETED"} == 1'), timeout=30)
    assert float(query(prometheus, 'sum(vipu_ipus{state="allocated"})')[0]["value"][1]) == 16
    assert query(prometheus, 'up{job="vipu"} == 1')
    wait_for(lambda: query(prometheus, "vipu:ipus_allocated:ratio"), timeout=30)
    assert float(query(prometheus, "vipu:ipus_allocated:ratio")[0]["value"][1]) == 0.25


def test_ipus_draining_under_a_running_job_count_as_in_use(server, prometheus):
    """Regression: an agent drained under a running job showed its IPUs drained, so vipu_ipus said 0 allocated while
    vipu_ipu_allocation_info put the job on them, and the utilisation rule read 0. They are draining: the join and
    the IPUs in use (allocated + draining) agree, and the recording rule counts them."""
    from tests.cli.test_cli_e2e import run
    from tests.cli.test_jobs_e2e import jobs

    [job] = submit(server, "--ipus", "4", "--time-limit", "10m")
    wait_for(lambda: jobs(server)[job]["job_state"] == ["RUNNING"])
    [agent] = {i["agent"] for i in json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
               if i["partition"] == f"slurm_{job}"}
    assert run(server, "vipu-admin", "drain", "agent", agent, "--reason", "fan").returncode == 0
    text = scrape(server.metrics_url)
    for line in ('vipu_ipus{ild="0",state="draining"} 4.0', 'vipu_ipus{ild="0",state="allocated"} 0.0',
                 'vipu_ipus{ild="0",state="drained"} 0.0', 'vipu_ipus{ild="0",state="idle"} 60.0'):
        assert line in text, line
    assert text.count(f'job_id="{job}"') == 4  # the join still puts the job on its 4 IPUs

    def value(expr: str) -> float | None:
        result = query(prometheus, expr)
        return float(result[0]["value"][1]) if result else None

    wait_for(lambda: value('sum(vipu_ipus{state="draining"})') == 4, timeout=30)
    assert value('count(vipu_ipu_allocation_info{job_id!=""})') == value('sum(vipu_ipus{state=~"allocated|draining"})')
    wait_for(lambda: value("vipu:ipus_allocated:ratio") == 4 / 64, timeout=30)


def dashboard_exprs() -> list[tuple[str, str]]:
    out = []
    for path in sorted((ROOT / "deploy/grafana/dashboards").glob("*.json")):
        for p in json.loads(path.read_text())["panels"]:
            out += [(f"{path.name}: {p['title']}", t["expr"]) for t in p["targets"]]
    return out


def test_dashboards_are_built_from_code():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_dashboards", ROOT / "deploy/grafana/build_dashboards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, text in module.build().items():
        assert (ROOT / "deploy/grafana/dashboards" / name).read_text() == text, f"{name}: run build_dashboards.py"
    for kind in ("datasources", "dashboards"):
        assert "apiVersion: 1" in next((ROOT / "deploy/grafana/provisioning" / kind).glob("*.yml")).read_text()


def test_the_dashboards_and_rules_count_the_ipus_in_use_by_the_controllers_list():
    """The in-use states (allocated, completing, draining) are the controller's list (ipu_states.IN_USE), built into
    the dashboards; the recording rule, written by hand, is checked against it: a state added to the list and
    missed there would leave IPUs in use out of the utilisation a dashboard and an alert read."""
    from vipu.partition.ipu_states import IN_USE

    selector = re.compile(r'vipu_ipus\{state=~"([^"]+)"\}')
    rules = (ROOT / "deploy/prometheus/vipu.rules.yml").read_text()
    found = selector.findall(rules) + [s for _, expr in dashboard_exprs() for s in selector.findall(expr)]
    assert len(found) >= 3 and all(set(states.split("|")) == set(IN_USE) for states in found), found


LONG_TRAINING = (
    "name: long-train\nipus: 4\ntime_limit: 5m\nworkload:\n  kind: train\n"
    "  model: {kind: mlp, layers: 4, hidden: 64, inputs: 32, outputs: 10, dtype: fp32}\n"
    "  layout: {t: 1, p: 1, r: 4, micro_batch: 8, micro_batches: 2}\n  optimizer: sgd\n  steps: 100000\n"
)


def test_every_dashboard_expression_parses_and_returns_data(server, prometheus, prometheus_bin, tmp_path):
    busy(server)
    spec = tmp_path / "long.yaml"
    spec.write_text(LONG_TRAINING)
    [training] = submit(server, str(spec))  # runs while Prometheus scrapes, for the job dashboard's step panels
    wait_for(lambda: query(prometheus, f'vipu_job_step_seconds{{job_id="{training}"}}'), timeout=60)
    job = str(training)
    exprs = [(title, e.replace("$__rate_interval", "30s").replace("$job", job)) for title, e in dashboard_exprs()]
    rules = tmp_path / "exprs.yml"  # promtool parses expressions as recording rules
    rules.write_text(json.dumps({"groups": [{"name": "dashboards", "rules": [
        {"record": f"dashboard:expr{i}", "expr": e} for i, (_, e) in enumerate(exprs)]}]}))
    parsed = subprocess.run([str(prometheus_bin / "promtool"), "check", "rules", str(rules)], capture_output=True,
                            text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stdout + parsed.stderr
    deadline = time.monotonic() + 60  # a few scrapes, so that rate() has two samples
    while (empty := [title for title, e in exprs if not query(prometheus, e)]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert empty == []


def test_a_requeued_run_is_counted_as_requeued(server):
    """Regression: `vipu requeue` of a running job counted a completion in state PENDING."""
    from tests.cli.test_cli_e2e import run
    from tests.cli.test_jobs_e2e import show

    [job] = submit(server, "--ipus", "4", "--time-limit", "10m")
    wait_for(lambda: show(server, job)["state"] == "RUNNING")
    assert run(server, "vipu", "requeue", str(job)).returncode == 0
    text = scrape(server.metrics_url)
    assert 'vipu_job_completions_total{state="REQUEUED"} 1.0' in text
    assert 'vipu_job_completions_total{state="PENDING"}' not in text
