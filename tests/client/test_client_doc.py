"""docs/client.md's example runs as written against a real controller and prints what the page says it does."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def example() -> str:
    [code] = re.findall(r"```python\n(.*?)```", (ROOT / "docs/client.md").read_text(), re.S)
    return code


def test_the_client_page_example_runs_as_written(server):
    out = subprocess.run([sys.executable, "-c", example()], env=server.env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("controller ") and lines[0].endswith("on bow-pod64 (64 IPUs)")
    assert lines[1] == "job 1 PENDING (JobHeldUser), 4 IPUs, limit 600 s"
    assert lines[2] == "queued: 1 sleeper PD" or lines[2] == "queued: 1 sleeper R"
    assert lines[3:5] == ["cancelled: [1]", "history: [(1, 'CANCELLED')]"]
    assert re.fullmatch(r"typed: typed sleeps 60 s, submitted at \d\d:\d\d, started: False; \{'kind': 'sleep',"
                        r" 'duration': 60.0, 'exit_code': 0\}", lines[5]), lines[5]
    assert lines[6].startswith("partition scratch: IPUs ") and len(json.loads(lines[6].split(": IPUs ")[1])) == 8
    assert lines[7:9] == ["partitions: ['scratch']", "IPUOF_VIPU_API_PARTITION_ID=scratch"]
    assert lines[9].startswith("refused: INVALID_ARGUMENT INVALID_FIELD size: size is 12, not a power of two")
    assert lines[10] == "refused: NOT_FOUND JOB_NOT_FOUND ('job', '999')"
    assert lines[11].startswith('{"reason": "JOB_NOT_FOUND", "message": "job 999 does not exist;')
