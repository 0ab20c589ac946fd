"""`vipu-admin last-job-id FILE...`: the highest job id a controller handed out, read from its log or a database
(control/ids_given.py), with the first_job_id line a restore puts in the scheduler config. Needs no controller:
after a restore the running one holds only the older copy's ids."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import typer

from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, NOT_FOUND, fail
from vipu.cli.output import print_json
from vipu.control.ids_given import highest_given


def register(app: typer.Typer) -> None:
    @app.command("last-job-id")
    def last_job_id(ctx: typer.Context,
                    files: list[Path] = typer.Argument(..., help="the controller's log (text or JSON lines; those"
                                                       " since the backup a restore puts back are enough) and any"
                                                       " database of it (vipu.sqlite3, the one moved aside)"),
                    json_out: bool = JsonOption):
        """The highest job id a controller's log or database shows handed out (for first_job_id after a restore).

        Counts an array's tasks, not only its `jobs N_[...] submitted` line. Prints each file's highest as a
        comment, then `first_job_id: N+1`, the line a restored state's scheduler config needs so that no id is
        given twice (README: Backing up and restoring); the output is YAML to append. Needs no controller."""
        found: dict[str, int | None] = {}
        for path in files:
            try:
                found[str(path)] = highest_given(path)
            except FileNotFoundError:
                fail("vipu-admin", f"{path}: no such file; give the controller's log or its database", NOT_FOUND)
            except (OSError, sqlite3.Error, ValueError, KeyError) as e:
                fail("vipu-admin", f"{path}: cannot read it ({e}); give the controller's log or a vipu.sqlite3"
                     " database, readable", BAD_INPUT)
        given = [n for n in found.values() if n is not None]
        if not given:
            fail("vipu-admin", f"no job submitted in {', '.join(found)}: give the controller's log (its `job N"
                 " submitted` lines) or its database", NOT_FOUND)
        highest = max(given)
        if ctx.obj.wants_json(json_out):
            print_json({"highest_job_id": highest, "first_job_id": highest + 1, "files": found})
            return
        for name, n in found.items():
            print(f"# {name}: {'no job submitted' if n is None else n}")
        print(f"first_job_id: {highest + 1}")
