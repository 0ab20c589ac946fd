"""What a start says of a database that lost records: one SQLite cannot read (and the command that copies what it
still can), and such a copy, which keeps the meta table but may lack the records every start writes, or the records
of some jobs.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from vipu.errors import InvalidArgument, VipuError
from vipu.scheduler.arrays import spans
from vipu.scheduler.job_record import SchedulerMeta
from vipu.scheduler.recovery import stored_next_id
from vipu.store import Store
from vipu.store_faults import cannot_write, is_disk_fault, is_unreadable_header
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


MISSING = "in no table at a start: its record was lost"  # the quarantine's error for a job id found so
SHOWN_SPANS = 20  # id ranges a log line names


SKIPPED = "skipped_job_ids"  # the meta key of the id ranges first_job_id jumped over, [[first, last], ...]


def note_skipped_ids(store: Store, records: list, first_job_id: int) -> None:
    """A first_job_id above the next stored id: the ids between are never handed out. Kept, so that a later start
    does not count them lost (walk32: 4,976 ids quarantined as lost after a restore)."""
    below = stored_next_id(records)
    if first_job_id > below:
        store.set_meta(SKIPPED, [*(store.get_meta(SKIPPED) or []), [below, first_job_id - 1]])


def _handed_out(below: int, skipped: list) -> list[int]:
    """The ids below `below` outside the skipped ranges (a list as long as the ids handed out, however far
    first_job_id jumped)."""
    ids, start = [], 1
    for first, last in sorted(skipped):
        ids += range(start, min(first, below))
        start = max(start, last + 1)
    return ids + list(range(start, below))


def name_lost_jobs(store: Store, path: Path, records: list, now: float) -> list[int]:
    """The ids below the next job id that are in neither the records, the history nor the quarantine table: logged,
    and listed in the quarantine table (so the next start does not say it again). Why: a copy of a damaged
    database (the .dump the unreadable refusal names) keeps what it could read; the jobs on a lost page were gone
    from the queue without a word, though `vipu show job` said so. Ids are given once and never again, so every one
    below the next is in one of those tables unless its record was lost."""
    live = {r.id for k, r in records if k == "job"}
    below = stored_next_id(records)
    listed = live | {int(name) for name, _ in store.quarantined(("job", "job_history")) if name.isdigit()}
    listed = {i for i in listed if 0 < i < below}
    handed_out = _handed_out(below, store.get_meta(SKIPPED) or [])
    if len(listed) + store.history_count() == len(handed_out):  # the usual start: one count, no list of the history
        return []
    lost = sorted(set(handed_out) - listed - store.history_ids(below))
    if lost:
        store.name_lost_jobs(lost, MISSING, now)
        named = spans(lost).split(",")
        log.warning("%d job id(s) below the next one (%d) are in none of the tables of %s: their records were lost"
                    " (with a damaged page or in a copy of a damaged database) or moved aside under another name: %s;"
                    " the quarantine table lists them, and they are not given again", len(lost), below, path,
                    ",".join(named[:SHOWN_SPANS]) + (" ..." if len(named) > SHOWN_SPANS else ""))
    return lost


def unreadable(path: Path, e: sqlite3.DatabaseError) -> VipuError:
    """The refusal of a start that SQLite failed: a disk fault (full, read-only, an I/O error) is no damage, and
    its fix is the disk's (store_faults.py); a file SQLite cannot read as a database at all gives nothing to a copy
    (.dump then writes an empty file, which the next start refuses as emptied); else the copy command."""
    if is_disk_fault(e):
        return cannot_write(path.parent, e)
    if is_unreadable_header(e):
        return InvalidArgument(
            f"the state database {path} cannot be read ({e}): SQLite cannot read its header, so no copy can get"
            " anything out of it; restore it (with its -wal file) from a backup, or move it aside with its -wal and"
            " -shm files and start with --accept-empty-state to begin afresh (its queue, job history, users and"
            " partitions are then gone, and job ids start again at 1)")
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
