"""A damaged job history: found at every start, and the database rebuilt around it (vipu-server
--quarantine-bad-records): every other table copied, the history's readable rows kept, and the ids of the rows lost
listed in the quarantine table.

Why check at every start: a damaged history page fails only the next move into it, long after. quick_check reads
each page once (its cost: bench/bench_recovery.py's restart with 400,000 stored jobs) and skips what integrity_check
adds (each index checked against its table).

Why a new file: SQLite cannot drop a table whose pages are damaged (DROP walks them), and the sqlite3 shell's
.recover is missing from many builds (Debian's has no sqlite_dbpage). The damaged file is kept beside it.
Why no transaction around it: SQLite may end one at a damaged page's error; the new file is used only once
complete. Why by id: a read that reaches the damaged page fails, the others work; so rows are read in chunks of ids
taken from the table's indexes (their own pages), and a chunk that fails is split until the lost rows are single
ids. The ids the indexes list are the count before: every one not copied is named lost, and a row no index lists
that does not carry its own id is made of the damaged bytes and named as no job.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import NamedTuple

from vipu.store_schema import HISTORY_TABLES, migrate

CHUNK = 500
COPIED = ("records", "meta", "quarantine", "job_history_records")
COLUMNS = "id, user, array_job_id, state, ended, request_id, doc"


def damaged_tables(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(table, what SQLite found) for each history table whose pages do not check out."""
    found = []
    for table in HISTORY_TABLES:
        try:
            rows = [r[0] for r in db.execute(f"PRAGMA quick_check({table})")]
        except sqlite3.DatabaseError as e:
            rows = [str(e)]
        if rows != ["ok"]:
            found.append((table, " ".join("; ".join(rows).split())[:200]))
    return found


class Unrebuildable(Exception):
    """Neither the history table nor any of its indexes can be read through."""


class Rebuilt(NamedTuple):
    kept: int  # history rows copied
    had: int  # rows the history's indexes listed before (or, neither readable, the table's rows)
    lost: list[int]  # ids of the jobs whose rows were lost, or moved aside as unreadable
    strays: list[int]  # rowids of rows made of the damaged bytes (no job's), moved aside too
    damaged: Path  # where the damaged file now is


LOST = "in a damaged page of the job_history table: lost"  # the quarantine's error for a lost job's id


def rebuild_history(path: Path, now: float) -> Rebuilt:
    """Rebuild the database at `path` (closed by every connection)."""
    new = path.with_name(path.name + ".rebuilt")
    for p in (new, Path(f"{new}-wal"), Path(f"{new}-shm")):
        p.unlink(missing_ok=True)
    os.close(os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))  # the state's files: 0600
    db = sqlite3.connect(new, isolation_level=None)
    try:
        migrate(db)
        db.execute("PRAGMA synchronous=OFF")  # a new file, used only once complete (fsync'd before the rename)
        db.execute("ATTACH DATABASE ? AS old", (str(path),))
        for table in COPIED:
            db.execute(f"INSERT INTO main.{table} SELECT * FROM old.{table}")
        listed = _listed_ids(db)
        _copy_history(db, listed)
        copied = {i for (i,) in db.execute("SELECT id FROM main.job_history")}
        if listed is None:  # both indexes damaged, the table read whole: what it held is all that is known
            listed = sorted(copied)
        strays = _strays(db, listed, now)
        lost = sorted(set(listed) - copied)
        db.executemany("INSERT INTO main.quarantine (kind, name, doc, error, moved) VALUES ('job_history', ?, '',"
                       " ?, ?)", [(str(i), LOST, now) for i in lost])
        unreadable = bad_history_rows(db, decode=True)  # copied whole: a row's bytes are not checked by the copy
        quarantine_history_rows(db, unreadable, now)
        lost = sorted(lost + [i for i, _ in unreadable])
        kept = db.execute("SELECT count(*) FROM main.job_history").fetchone()[0]
        db.execute("DETACH DATABASE old")
    finally:
        db.close()
    with open(new, "rb") as f:
        os.fsync(f.fileno())
    damaged = path.with_name(f"{path.name}.damaged-{int(now)}")
    for side in ("-wal", "-shm"):  # left when its last close could not checkpoint; never to pair with the new file
        if Path(f"{path}{side}").exists():
            os.replace(f"{path}{side}", f"{damaged}{side}")
    os.replace(path, damaged)
    os.replace(new, path)
    return Rebuilt(kept, len(listed), lost, strays, damaged)


def bad_history_rows(db: sqlite3.Connection, decode: bool) -> list[tuple[int, str]]:
    """(id, why) of each history row whose record is not JSON, or with `decode` not UTF-8 text either. Why two
    depths: SQLite's json_valid reads the table in C, cheap enough for every start (bench/bench_recovery.py
    prints its time with 400,000 stored jobs); it finds random bytes over a record, but not a valid document with
    a few bytes that are not UTF-8, which only Python's decoding of every record finds (slower: the same bench
    prints it): that is left to a start that repairs."""
    found = [(i, "not a JSON document: damaged on disk") for (i,) in
             db.execute("SELECT id FROM main.job_history WHERE NOT json_valid(doc)")]
    if decode:
        seen = {i for i, _ in found}
        for i, doc in db.execute("SELECT id, CAST(doc AS BLOB) FROM main.job_history"):
            try:
                doc.decode()
            except UnicodeDecodeError as e:
                if i not in seen:
                    found.append((i, f"its bytes are not UTF-8 text (byte {e.start} of {len(doc)}): damaged on disk"))
    return sorted(found)


def quarantine_history_rows(db: sqlite3.Connection, rows: list[tuple[int, str]], now: float) -> None:
    """Move these history rows (id, why) into the quarantine table, their bytes kept as they were."""
    if not rows:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for i, why in rows:
            db.execute("INSERT INTO main.quarantine (kind, name, doc, error, moved) SELECT 'job_history', ?,"
                       " CAST(doc AS BLOB), ?, ? FROM main.job_history WHERE id = ?", (str(i), why, now, i))
            db.execute("DELETE FROM main.job_history WHERE id = ?", (i,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _listed_ids(db: sqlite3.Connection) -> list[int] | None:
    """The ids the history's indexes list (their own pages, apart from the table's), sorted: the rows it held (None:
    neither index reads). Why two: a damaged index page may end its read early without an error, as a table's does."""
    ids: set[int] = set()
    readable = False
    for index in ("job_history_ended", "job_history_user"):
        try:
            ids.update(i for (i,) in db.execute(f"SELECT id FROM old.job_history INDEXED BY {index}"))
            readable = True
        except sqlite3.DatabaseError:
            continue
    return sorted(ids) if readable else None


def _copy_history(db: sqlite3.Connection, ids: list[int] | None) -> None:
    """Copy the readable history rows. Why not trust a copy without an error: random bytes over a page's cells
    (its header kept) end a read early, or make rows up, without one; the caller compares with the ids listed."""
    insert = f"INSERT OR REPLACE INTO main.job_history ({COLUMNS}) SELECT {COLUMNS} FROM old.job_history"
    try:
        db.execute(insert)
        return
    except sqlite3.DatabaseError:
        if ids is None:
            raise Unrebuildable("the job_history table and its indexes are damaged") from None
    chunks = [ids[at:at + CHUNK] for at in range(0, len(ids), CHUNK)]
    while chunks:
        chunk = chunks.pop()
        try:
            db.execute(f"{insert} WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
        except sqlite3.DatabaseError:
            if len(chunk) > 1:
                chunks += [chunk[:len(chunk) // 2], chunk[len(chunk) // 2:]]


def _strays(db: sqlite3.Connection, listed: list[int], now: float) -> list[int]:
    """Rows no index listed whose record does not carry their id: made of the damaged bytes, no job's. Moved into
    the quarantine (kind job_history_stray, named by rowid), never named as jobs."""
    db.execute("CREATE TEMP TABLE listed (id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO temp.listed (id) VALUES (?)", [(i,) for i in listed])
    strays = [i for (i,) in db.execute(
        "SELECT id FROM main.job_history WHERE id NOT IN (SELECT id FROM temp.listed) AND (NOT json_valid(doc) OR"
        " json_extract(doc, '$.id') IS NOT id)")]
    for i in strays:
        db.execute("INSERT INTO main.quarantine (kind, name, doc, error, moved) SELECT 'job_history_stray', ?,"
                   " CAST(doc AS BLOB), 'a row made of the bytes of a damaged page: no job''s record', ? FROM"
                   " main.job_history WHERE id = ?", (str(i), now, i))
        db.execute("DELETE FROM main.job_history WHERE id = ?", (i,))
    db.execute("DROP TABLE temp.listed")
    return strays
