"""What a start says of a database that lost records: one SQLite cannot read (and the command that copies what it
still can), and such a copy, which keeps the meta table but may lack the records every start writes.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.scheduler.job_record import SchedulerMeta
from vipu.store import Store
from vipu.store_schema import SCHEMA_VERSION

log = logging.getLogger("vipu.recovery")


def kept_records(store: Store, path: Path, records: list, accept_empty: bool) -> list:
    """The records of a database that held a controller's state, or InvalidArgument if they lack what every start
    writes (the next job id, the Pod's machines). Why: a copy of a damaged database (the .dump the unreadable
    refusal names) keeps the meta table but may have lost every record; served as it is, the queue was empty
    without a word and job ids started again at 1."""
    missing = [what for what, kind in (("the next job id (scheduler_meta)", "scheduler_meta"),
                                       ("the Pod's machines (agent records)", "agent"))
               if not any(k == kind for k, _ in records)]
    if not missing:
        return records
    if not accept_empty:
        store.close()
        raise InvalidArgument(
            f"the state database {path} held a controller's state (its meta table names its Pod), but its records"
            f" lack {' and '.join(missing)}: they were lost (a copy of a damaged database keeps only what it could"
            " read); restore the database from a backup, or start with --accept-empty-state to serve what is left"
            f" ({len(records)} record(s): the jobs, partitions and users missing are gone for good)")
    log.warning("--accept-empty-state: %s lacked %s; serving the %d record(s) left, job ids going on after the"
                " highest its history holds", path, " and ".join(missing), len(records))
    if "scheduler_meta" in {k for k, _ in records}:
        return records
    return [*records, ("scheduler_meta", SchedulerMeta(next_job_id=store.highest_history_id() + 1))]


def unreadable(path: Path, e: sqlite3.DatabaseError) -> InvalidArgument:
    return InvalidArgument(
        f"the state database {path} cannot be read ({e}); restore it from a backup, or copy what it still holds"
        f" into a new file with {_recovery_command(path)} and move that file into its place (the damaged one, its"
        " -wal and its -shm files aside), or move it away to start afresh"
    )


def _recovery_command(path: Path) -> str:
    """A command that copies the readable rows of a damaged database into a new one. Why .dump, not .recover: the
    sqlite3 shell's .recover needs the dbpage table, which Debian's sqlite3 (3.40) lacks; there it fails even on a
    sound vipu-sim database. .dump skips what it cannot read but ends its output with ROLLBACK, which would undo the
    whole copy: sed turns that into COMMIT. .dump leaves out PRAGMA user_version: the command sets it again, else
    the copy would be taken for a state from before the numbering."""
    recovered = path.with_name(path.name + ".recovered")
    version = _header_version(path)
    keep = f" && sqlite3 {recovered} 'PRAGMA user_version = {version}'" if version is not None else ""
    return f"`sqlite3 {path} .dump | sed 's/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3 {recovered}{keep}`"


def _header_version(path: Path) -> int | None:
    """The schema version (user_version) in a database file's header, if the header is a sound one's: read from the
    bytes, since SQLite may refuse the whole file."""
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError:
        return None
    if len(header) < 64 or not header.startswith(b"SQLite format 3\x00"):
        return None
    version = int.from_bytes(header[60:64], "big", signed=True)
    return version if 0 <= version <= SCHEMA_VERSION else None
