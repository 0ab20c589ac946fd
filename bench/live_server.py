"""Start a real vipu-server (the installed console script) on a free port for a benchmark."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def start_server(state_dir: str, pod: str = "bow-pod256", *extra: str) -> tuple[subprocess.Popen, int]:
    exe = Path(sys.executable).parent / "vipu-server"
    port = ["--port", "0"] if "--port" not in extra else []
    proc = subprocess.Popen(
        [str(exe), "--pod", pod, *port, "--state-dir", state_dir, "--metrics-port", "0", "--ray", "off", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    port = int(re.search(r"listening on \S+:(\d+)", proc.stdout.readline()).group(1))
    return proc, port
