"""sacct and `show job` over both places a job can be: the scheduler's memory and, once it ended more than
min_job_age ago, the store's job history (scheduler/purge.py).

Why light rows: the history may hold hundreds of thousands of jobs. A listing keeps only (ended, id) of each stored
job, and a page reads and parses just its own rows when it is shown. A job purged after the snapshot was taken is in
both places for a moment; its memory copy is the one listed.
"""

from __future__ import annotations

import heapq
from typing import Callable, NamedTuple

from vipu.access import Identity
from vipu.scheduler.job_record import Job
from vipu.scheduler.job_states import TERMINAL, JobState
from vipu.scheduler.reasons import decorate
from vipu.scheduler.view import QueueView, by_job_id, history_rows
from vipu.store import Store


class Stored(NamedTuple):
    """A row of the store's job history, read when its page is shown."""

    ended: float
    id: int


def visible_users(identity: Identity, users: set[str]) -> list[str] | None:
    """The users whose stored jobs the caller may list: None for any, [] for none."""
    if identity.admin:
        return sorted(users) if users else None
    return [identity.name] if not users or identity.name in users else []


def history_listing(queue: QueueView, store: Store, keep: Callable[[Job], bool], identity: Identity,
                    users: set[str], ids: set[int], states: set[JobState] | None, duplicates: bool, limit: int,
                    since: float | None = None) -> list:
    """QueueView.history's listing, with the stored jobs merged in (by job id): Jobs and Stored rows."""
    in_memory = queue.table.jobs
    memory_rows = history_rows(in_memory.values(), keep, states, duplicates)
    if since is not None:
        memory_rows = [r for r in memory_rows if r[0] >= since or r[2].state not in TERMINAL]
    stored_rows: list[tuple[float, int, object]] = []
    wanted = TERMINAL if states is None else set(states) & TERMINAL
    allowed = visible_users(identity, users)
    if wanted and allowed != []:
        keys = store.history_keys(allowed or (), sorted(ids), () if duplicates else sorted(s.value for s in wanted),
                                  since)
        keys = [(ended, i) for ended, i in keys if i not in in_memory]
        if duplicates:  # earlier runs are in each record's transitions: these listings parse every record
            docs = store.history_docs(i for _, i in keys)
            stored_rows = history_rows((Job.model_validate_json(docs[i]) for _, i in keys if i in docs), keep,
                                       states, True)
        else:
            stored_rows = [(ended, i, Stored(ended, i)) for ended, i in keys]
    rows = by_job_id(list(heapq.merge(memory_rows, stored_rows, key=lambda r: r[:2])), limit)
    return [decorate(queue, row) if isinstance(row, Job) else row for _, _, row in rows]


def shown(store: Store) -> Callable[[object], Job]:
    """A page's rows as jobs: a stored one read from the history."""

    def present(row: object) -> Job:
        if isinstance(row, Stored):
            doc = store.history_docs([row.id]).get(row.id)
            if doc is None:  # the history lost it between listing and page: a damaged store, not a client error
                raise LookupError(f"job {row.id} left the job history while it was listed")
            return Job.model_validate_json(doc)
        return row  # type: ignore[return-value]

    return present


def stored_job(store: Store, job_id: int) -> Job | None:
    """The job from the history, if it was purged there."""
    doc = store.history_docs([job_id]).get(job_id)
    return Job.model_validate_json(doc) if doc is not None else None


def stored_retry(store: Store, user: str, request_id: str) -> list[Job]:
    """A user's jobs in the history that this request id submitted (a retry after they ended and left memory)."""
    return [Job.model_validate_json(doc) for _, doc in store.history_requests(user, request_id)]
