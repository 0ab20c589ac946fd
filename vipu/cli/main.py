"""`vipu`: the user CLI (its typer app: vipu_app.py). `vipu queue` and `vipu submit` in their common forms run
without building the app, or importing typer (fast_path.py): Slurm users run them in loops, and typer's import and
the app's build were most of each call's time (bench/bench_cli.py)."""

from __future__ import annotations

import sys


def run() -> None:
    from vipu.cli.fast_path import leave, run_fast

    try:
        run_fast(sys.argv[1:])  # ends the process if it reads the command line, else returns
    except SystemExit as e:
        leave(e.code)
    from vipu.cli.failure import run_app
    from vipu.cli.vipu_app import app

    run_app(app, "vipu")


def __getattr__(name: str):
    """`from vipu.cli.main import app`, as before the app had a module of its own (docs/generate.py, tests)."""
    if name == "app":
        from vipu.cli.vipu_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    run()
