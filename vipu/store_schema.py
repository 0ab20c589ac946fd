"""The state database's tables and their ordered migrations, numbered by SQLite's user_version.

Why a number: a database written by a newer vipu-sim may hold records this version cannot read, so it is refused
with a message instead of half-loaded. An older one is brought up to date step by step, in one transaction, so a
failed upgrade leaves it as it was. A change to a record's fields that an older version could not read adds a step
here (at least the version bump), so that version refuses the database rather than the records.
"""

from __future__ import annotations

import sqlite3

MIGRATIONS: list[tuple[str, ...]] = [
    (  # 1: the tables every version wrote before the numbering (user_version 0)
        """CREATE TABLE IF NOT EXISTS records (
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            doc  TEXT NOT NULL,
            PRIMARY KEY (kind, name)
        ) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
    ),
    (  # 2: records that did not load, moved aside by vipu-server --quarantine-bad-records
        """CREATE TABLE IF NOT EXISTS quarantine (
            kind  TEXT NOT NULL,
            name  TEXT NOT NULL,
            doc   BLOB NOT NULL,
            error TEXT NOT NULL,
            moved REAL NOT NULL,
            PRIMARY KEY (kind, name, moved)
        ) WITHOUT ROWID""",
    ),
    (  # 3: ended jobs moved out of memory after min_job_age (scheduler/purge.py), read by `vipu history`
        """CREATE TABLE IF NOT EXISTS job_history (
            id           INTEGER PRIMARY KEY,
            user         TEXT NOT NULL,
            array_job_id INTEGER,
            state        TEXT NOT NULL,
            ended        REAL NOT NULL,
            request_id   TEXT,
            doc          TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS job_history_ended ON job_history (ended, id)",
        "CREATE INDEX IF NOT EXISTS job_history_user ON job_history (user, ended)",
        "CREATE INDEX IF NOT EXISTS job_history_array ON job_history (array_job_id) WHERE array_job_id IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS job_history_request ON job_history (user, request_id) WHERE request_id IS NOT NULL",
    ),
    (  # 4: a purged job's runner records (its training result, its program's output), moved in the same transaction
        """CREATE TABLE IF NOT EXISTS job_history_records (
            id   INTEGER NOT NULL,
            kind TEXT NOT NULL,
            doc  TEXT NOT NULL,
            PRIMARY KEY (id, kind)
        ) WITHOUT ROWID""",
        # the records of jobs purged before this step, which stayed behind (the kinds of that version's runners)
        """INSERT OR REPLACE INTO job_history_records (id, kind, doc) SELECT h.id, r.kind, r.doc FROM records r
            JOIN job_history h ON r.name = CAST(h.id AS TEXT) WHERE r.kind IN ('job_result', 'program_run')""",
        """DELETE FROM records WHERE kind IN ('job_result', 'program_run')
            AND name IN (SELECT CAST(id AS TEXT) FROM job_history)""",
    ),
    # 5: an agent's drain reason and a failed IPU's (admin_records.Reason): no table changes, but a version before
    # could not read those records, so it must refuse the database
    (),
    # 6: a job's owner's uid (Job.uid), its spec's comment and submit_line: no table changes; a record stored before
    # loads with none of them, and a version before could not read a record that has them
    (),
    # 7: a program run's Ray node (its id, stored before its supervisor starts, and address), its spool and why its
    # end could not be read (ProgramRecord): no table changes; a run stored before loads with none of them (its end
    # is read on the controller's machine only), and a version before would not ask the node a restart must ask
    (),
]
HISTORY_TABLES = ("job_history", "job_history_records")  # checked at every start: they grow with the history
SCHEMA_VERSION = len(MIGRATIONS)


# checked at every start: a dropped one failed with a wrong reason (a full disk; damaged history pages, whose
# rebuild could not work without the table)
TABLES = ("records", "meta", "quarantine", *HISTORY_TABLES)
# each table's statements: the table, then its indexes (a dropped table takes its indexes with it)
_CREATED = {table: [s for step in MIGRATIONS for s in step if s.startswith("CREATE")
                    and (f"EXISTS {table} (" in s or f" ON {table} (" in s)] for table in TABLES}


class MissingTables(Exception):
    """Tables of the schema that a database at its version lacks (dropped by hand, or lost with their pages)."""

    def __init__(self, tables: list[str]):
        super().__init__(f"no table {', '.join(tables)}")
        self.tables = tables


def missing_tables(db: sqlite3.Connection) -> list[str]:
    have = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [t for t in TABLES if t not in have]


def make_tables(db: sqlite3.Connection, tables: list[str]) -> None:
    """The tables again, empty, with their indexes, as the schema creates them."""
    for table in tables:
        for statement in _CREATED[table]:
            db.execute(statement)


class NewerSchema(Exception):
    def __init__(self, found: int):
        super().__init__(f"schema {found}, newer than {SCHEMA_VERSION}")
        self.found = found


class UnknownSchema(Exception):
    """A version no vipu-sim writes (below 0): changed by hand or damaged; migrating it would run steps at random."""

    def __init__(self, found: int):
        super().__init__(f"schema {found}, which no version writes")
        self.found = found


def migrate(db: sqlite3.Connection) -> None:
    """Bring the database to SCHEMA_VERSION; NewerSchema if it is past it. `db` is in autocommit mode."""
    found = db.execute("PRAGMA user_version").fetchone()[0]
    if found > SCHEMA_VERSION:
        raise NewerSchema(found)
    if found < 0:
        raise UnknownSchema(found)
    if found == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for step in MIGRATIONS[found:]:
            for statement in step:
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
