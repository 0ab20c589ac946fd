"""The start's checks and repairs of the database, part of the Store: damaged history pages and rows found, and
records moved aside into the quarantine table (store_rebuild.py does the history's work). They run on the store's
writing thread, the only one that uses its connection, and wait for no timeout: the start has nothing to answer.
"""

from __future__ import annotations

from typing import Iterable

from vipu.store_damage import Damaged
from vipu.store_rebuild import bad_history_rows, damaged_tables, quarantine_history_rows


class Repairs:
    """Mixed into the Store, whose connection, writing thread and copy of the records these use."""

    def damaged_tables(self) -> list[tuple[str, str]]:
        """(table, what SQLite found) for each history table whose pages do not check out (store_rebuild.py)."""
        return self._writer.call(lambda: damaged_tables(self._db))

    def bad_history_rows(self, decode: bool) -> list[tuple[int, str]]:
        """(id, why) of each history row whose record cannot be read (store_rebuild.py)."""
        return self._writer.call(lambda: bad_history_rows(self._db, decode))

    def quarantine_history(self, rows: list[tuple[int, str]], now: float) -> None:
        """Move these history rows (id, why) into the quarantine table, as they were."""
        self._writer.call(lambda: quarantine_history_rows(self._db, rows, now))

    def quarantine(self, damaged: Iterable[Damaged], now: float) -> None:
        """Move records out of the way into the quarantine table, kept as they were for inspection."""
        damaged = list(damaged)

        def move() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for x in damaged:
                    self._db.execute(
                        "INSERT INTO quarantine (kind, name, doc, error, moved) SELECT kind, name, doc, ?, ? FROM"
                        " records WHERE kind = ? AND name = ?", (x.error, now, x.kind, x.name))
                    self._db.execute("DELETE FROM records WHERE kind = ? AND name = ?", (x.kind, x.name))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            with self._settle:
                if self._copy is not None:
                    self._copy.drop((x.kind, x.name) for x in damaged)

        self._writer.call(move)

    def quarantined(self, kinds: Iterable[str]) -> list[tuple[str, str]]:
        """(name, error) of the records of these kinds in the quarantine table."""
        kinds = list(kinds)
        return self._writer.call(lambda: self._db.execute(
            f"SELECT name, min(error) FROM quarantine WHERE kind IN ({', '.join('?' * len(kinds))}) GROUP BY name",
            kinds).fetchall())
