"""vipu_build_info: which build a controller runs, as Prometheus's own prometheus_build_info says it (a gauge of 1
whose labels are the facts), so a dashboard or an alert can tell versions apart across a fleet and a restart.

Why the revision comes from VIPU_REVISION first: an installed wheel or an image has no git history; the image sets
it at build time (deploy/container/Containerfile). A checkout (an editable install) asks git; else "unknown".
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from vipu import __version__

UNKNOWN = "unknown"


def revision(env: dict | None = None) -> str:
    """The git commit this code was built from (12 hex digits), or "unknown"."""
    env = os.environ if env is None else env
    if env.get("VIPU_REVISION"):
        return env["VIPU_REVISION"]
    package = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "-C", str(package), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else UNKNOWN


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return UNKNOWN


class BuildInfo(Collector):
    """The facts are read once, at the start: they do not change while the process runs."""

    def __init__(self, env: dict | None = None):
        self.labels = {"version": __version__, "revision": revision(env), "ray_version": package_version("ray"),
                       "python_version": platform.python_version()}

    def collect(self):
        info = GaugeMetricFamily("vipu_build_info", "The build the controller runs: vipu-sim's version, the git"
                                 " commit it was built from, Ray's and Python's versions (always 1).",
                                 labels=list(self.labels))
        info.add_metric(list(self.labels.values()), 1)
        yield info
