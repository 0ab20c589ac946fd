"""The `vipu-server` command. Why apart from app.py: `pip install vipu-sim` installs the command with the CLI, but
not what the controller needs (Ray, numpy, prometheus-client: the `server` extra); such an install gets one line
saying what to install, not a traceback."""

from __future__ import annotations

import sys

EXTRA = "pip install 'vipu-sim[server]'"
# the modules of the server extra's packages (pyproject.toml)
SERVER_MODULES = ("grpc_health", "grpc_reflection", "platformdirs", "numpy", "prometheus_client", "ray")


def main(argv: list[str] | None = None) -> int:
    try:
        from vipu.server.app import main as serve
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in SERVER_MODULES:
            raise
        import importlib.util

        missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
        print(f"vipu-server: error: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: the"
              f" controller needs the server extra; run `{EXTRA}`", file=sys.stderr)
        return 2  # as for any other thing to fix before it can start
    return serve(argv)


def run() -> None:
    sys.exit(main())
