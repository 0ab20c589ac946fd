"""Alerting that reaches someone: every alert has a severity Alertmanager routes on, a runbook and a promtool test
that fires it; the Alertmanager config passes amtool; and a controller that goes away pages the on-call through a
real Prometheus and Alertmanager (Debian's, installed by scripts/install_prometheus.sh)."""

from __future__ import annotations

import http.server
import json
import re
import signal
import socket
import subprocess
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.cli.test_jobs_e2e import wait_for

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy/prometheus/vipu.rules.yml"
RULE_TESTS = ROOT / "deploy/prometheus/tests/vipu.rules.test.yml"
ALERTMANAGER = ROOT / "deploy/alertmanager/alertmanager.yml"
SEVERITY_RECEIVERS = {"critical": "vipu-oncall", "warning": "vipu-team"}


@pytest.fixture(scope="session")
def tools() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts/install_prometheus.sh")], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, check=True)
    return ROOT / out.stdout.strip().splitlines()[-1]


def alerts() -> list[dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def test_every_alert_has_a_routed_severity_a_summary_and_a_runbook():
    names = [a["alert"] for a in alerts()]
    assert {"VipuControllerDown", "VipuControllerAbsent", "VipuStoreNotWritable", "VipuStoreWriteFailures"} <= set(names)
    index = (ROOT / "docs/runbooks/README.md").read_text()
    for alert in alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in SEVERITY_RECEIVERS, name
        assert alert["annotations"]["summary"], name
        runbook = alert["annotations"]["runbook_url"]
        assert runbook == f"docs/runbooks/{name}.md", name
        text = (ROOT / runbook).read_text()
        assert text.startswith(f"# {name}\n") and re.findall(r"^## (\w+)", text, re.M) == ["Meaning", "Check", "Fix"]
        assert f"| {name} | {alert['labels']['severity']} | [{name}.md]({name}.md) |" in index, name


def test_every_alert_fires_in_a_promtool_test_case():
    """promtool checks what each case expects; this checks each alert has a case where it fires."""
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {t["alertname"] for case in cases for t in case.get("alert_rule_test", []) if t["exp_alerts"]}
    assert {a["alert"] for a in alerts()} - fired == set()


def test_rules_pass_promtool_and_the_alertmanager_config_passes_amtool(tools):
    for cmd in ([tools / "promtool", "test", "rules", RULE_TESTS],
                [tools / "amtool", "check-config", ALERTMANAGER]):
        out = subprocess.run([str(c) for c in cmd], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("labels, receiver", [
    (["severity=critical", "alertname=VipuControllerDown"], "vipu-oncall"),
    (["severity=warning", "alertname=VipuQueueStuck"], "vipu-team"),
    (["alertname=SomethingElse"], "vipu-team"),  # no severity of ours: still reaches someone
])
def test_alertmanager_routes_by_severity(tools, labels, receiver):
    out = subprocess.run([str(tools / "amtool"), "config", "routes", "test", f"--config.file={ALERTMANAGER}", *labels],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == receiver, out.stdout + out.stderr


class Receiver(http.server.ThreadingHTTPServer):
    """A webhook receiver: what Alertmanager posts, by path (/vipu-oncall, /vipu-team)."""

    def __init__(self):
        self.posts: list[tuple[str, dict]] = []
        received = self.posts

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scraped_up(port: int) -> bool:
    query = urllib.parse.urlencode({"query": 'up{job="vipu"} == 1'})
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{query}", timeout=5) as reply:
            return bool(json.loads(reply.read())["data"]["result"])
    except OSError:  # not listening yet
        return False


def with_debian_share(tools: Path) -> list[str]:
    """What to run Debian's Alertmanager under: it reads its notification templates from
    /usr/share/prometheus/alertmanager, a path compiled in, and ours are unpacked under .tools. A private mount
    namespace lays them over /usr/share for that process alone, so nothing of the system changes."""
    share = tools.parent / "share"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", OVERLAY + " && true", "sh",
                            str(share)], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"Debian's Alertmanager needs its templates in /usr/share, and no private mount namespace can lay"
                    f" them there here ({probe.stderr.strip()})")
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", OVERLAY + ' && shift && exec "$@"', "sh",
            str(share)]


OVERLAY = 'mount -t overlay overlay -o "lowerdir=$1:/usr/share" /usr/share'


def test_a_controller_that_goes_away_pages_the_oncall(tools, server_factory, tmp_path):
    """The shipped configs, with test timings: scrapes and evaluations every second, no `for:` and no group
    wait, the receivers' URLs pointing at a local webhook. SIGKILL the controller: the on-call hears of it."""
    server = server_factory()
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    am_port, prom_port = free_port(), free_port()
    am_config = tmp_path / "alertmanager.yml"
    am_config.write_text(ALERTMANAGER.read_text().replace("http://127.0.0.1:5001", f"http://127.0.0.1:{receiver.server_port}")
                         .replace("group_wait: 10s", "group_wait: 0s").replace("group_wait: 30s", "group_wait: 0s"))
    rules = tmp_path / "vipu.rules.yml"
    rules.write_text(RULES.read_text().replace("for: 1m", "for: 0s"))
    target = server.metrics_url.removeprefix("http://").removesuffix("/metrics")
    prom_config = tmp_path / "prometheus.yml"
    prom_config.write_text((ROOT / "deploy/prometheus/prometheus.yml").read_text()
                           .replace("127.0.0.1:9105", target).replace("127.0.0.1:9093", f"127.0.0.1:{am_port}")
                           .replace("vipu.rules.yml", str(rules)).replace("5s", "1s"))
    log = open(tmp_path / "log", "w")
    procs = [
        subprocess.Popen([*with_debian_share(tools), str(tools / "prometheus-alertmanager"),
                          f"--config.file={am_config}", f"--storage.path={tmp_path / 'am'}",
                          f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                         stdout=subprocess.DEVNULL, stderr=log),
        subprocess.Popen([str(tools / "prometheus"), f"--config.file={prom_config}",
                          f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                         stdout=subprocess.DEVNULL, stderr=log),
    ]
    try:
        wait_for(lambda: scraped_up(prom_port), 60)  # Prometheus scrapes the live controller: nothing fires
        assert not [p for p in receiver.posts if p[0] == "/vipu-oncall"], receiver.posts
        server.kill(signal.SIGKILL)

        def paged():
            return [body for path, body in receiver.posts if path == "/vipu-oncall" and body["status"] == "firing"]

        try:
            [body, *_] = wait_for(paged, 60)
        except AssertionError:
            pytest.fail(f"the on-call heard nothing; Prometheus's and Alertmanager's logs: {(tmp_path / 'log').read_text()[-3000:]}")
        [alert] = [a for a in body["alerts"] if a["labels"]["alertname"] == "VipuControllerDown"]
        assert alert["labels"]["severity"] == "critical" and alert["labels"]["instance"] == target
        assert alert["annotations"]["runbook_url"] == "docs/runbooks/VipuControllerDown.md"
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        receiver.shutdown()
