"""What the database's live records hold, kept in memory beside it, part of the Store.

Why: undoing a change the store could not write rebuilds the controller's memory from the stored records
(control/rollback.py), and on a stalled disk the database cannot be read either: a reader needs to write to the
-shm file, and that write blocks in the kernel like any other. The copy is updated by the writing thread only after
a transaction commits, so it always equals what the database holds, and a rollback reads it without the disk.
Its cost: the live records' JSON a second time (not the history's: moved jobs leave it).
"""

from __future__ import annotations

from typing import Iterable

Key = tuple[str, str]  # (kind, name)


class StoredCopy:
    def __init__(self, rows: Iterable[tuple[str, str, bytes]]):
        self._docs: dict[Key, bytes] = {(kind, name): doc for kind, name, doc in rows}

    def committed(self, rows: list[tuple[str, str, str]], gone: list[Key], moved: list[int],
                  job_kinds: Iterable[str]) -> None:
        """A transaction committed these puts and deletes, and moved these jobs' runner records into the history."""
        for kind, name, doc in rows:
            self._docs[(kind, name)] = doc.encode()
        for key in gone:
            self._docs.pop(key, None)
        for job_id in moved:
            for kind in job_kinds:
                self._docs.pop((kind, str(job_id)), None)

    def rows(self, kinds: Iterable[str]) -> list[tuple[str, str, bytes]]:
        """(kind, name, doc) of the given kinds, ordered by kind and name."""
        wanted = set(kinds)
        return sorted((kind, name, doc) for (kind, name), doc in self._docs.items() if kind in wanted)

    def get(self, kind: str, name: str) -> bytes | None:
        return self._docs.get((kind, name))

    def drop(self, keys: Iterable[Key]) -> None:
        """Records moved into the quarantine."""
        for key in keys:
            self._docs.pop(key, None)
