"""Users' programs as job specs for the end-to-end tests: a Python program file beside a batch script that runs it
with this test's interpreter (which has vipu installed), submitted as `vipu submit job.sh` will send it."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import show, submit, wait_for

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}


def program(tmp_path: Path, name: str, source: str, ipus: int = 4, script: str | None = None, **fields) -> str:
    """Write `source` (dedented) as NAME.py and a spec running it (or running `script`, a shell body, instead)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    body = script or f'exec "{sys.executable}" {name}.py\n'
    spec = {"name": name, "ipus": ipus, "time_limit": "5m", **fields,
            "workload": {"kind": "command", "script": "#!/bin/bash\n" + body, "submit_dir": str(tmp_path),
                         "environment": {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                                         "PYTHON": sys.executable}}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    return str(path)


def ended(server, job: int, timeout: float = 120.0) -> dict:
    return wait_for(lambda: (d := show(server, job))["state"] in DONE and d, timeout=timeout)


def output(tmp_path: Path, job: int) -> str:
    return (tmp_path / f"slurm-{job}.out").read_text()


__all__ = ["ended", "output", "program", "run", "show", "submit", "wait_for"]
