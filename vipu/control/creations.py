"""Request ids of the create calls (partitions, agents, clusters, allocations, users), as a submit's: a retry with
the same id returns the object the first call made, instead of a second one or an 'already exists'.

Why a record of its own: a job keeps its request id in its record, but the admin objects are V-IPU's records, kept
as V-IPU has them. Each create with an id stores what it made, by whom, for which request (a hash of its fields),
in the same store transaction as the object itself (the caller holds the lock), so a restart knows every id that
made something, and nothing is made twice. An id is each caller's own, as a submit's is each user's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable, Iterable, TypeVar

from pydantic import BaseModel, ConfigDict

from vipu.errors import AlreadyExists, FailedPrecondition
from vipu.scheduler.submission import check_request_id
from vipu.store import Store

T = TypeVar("T")


class Creation(BaseModel):
    """What one create call with a request id made."""

    model_config = ConfigDict(extra="forbid")

    name: str  # the store key: caller, kind and request id
    caller: str
    kind: str  # partition, agent, cluster, allocation, user
    request_id: str
    fingerprint: str  # sha256 of the request's fields: the same id for another request is refused
    made: str  # the name of the object made
    created_at: float  # its created_at: an object of that name made later is another one


KINDS: dict[str, type[BaseModel]] = {"creation": Creation}


def fingerprint(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


class Creations:
    def __init__(self, store: Store, records: Iterable[Creation] = ()):
        self.store = store
        self.by_key: dict[str, Creation] = {record.name: record for record in records}

    def once(self, caller: str, kind: str, request_id: str, fields: dict, create: Callable[[], T],
             find: Callable[[str], T | None]) -> T:
        """`create()`, unless this caller's `request_id` made an object of `kind` before: then that object, as
        `find(name)` gives it now. No request id: `create()`. Call under the lock: what is made and its record
        are one store transaction. `create()`'s result has a name and a created_at."""
        if not request_id:
            return create()
        check_request_id(request_id)
        key = json.dumps([caller, kind, request_id])
        digest = fingerprint(fields)
        earlier = self.by_key.get(key)
        if earlier is not None:
            if earlier.fingerprint != digest:
                raise AlreadyExists(f"request_id {request_id!r} was already used for {kind} {earlier.made} with other"
                                    f" fields; use a new request id for a new {kind}", reason="REQUEST_ID_REUSED",
                                    field="request_id")
            found = find(earlier.made)
            if found is None or getattr(found, "created_at", None) != earlier.created_at:
                raise FailedPrecondition(
                    f"request_id {request_id!r} made {kind} {earlier.made}, which has been removed since; use a new"
                    f" request id to make another", reason="CREATED_OBJECT_GONE", resource=(kind, earlier.made))
            return found
        made = create()
        record = Creation(name=key, caller=caller, kind=kind, request_id=request_id, fingerprint=digest,
                          made=made.name, created_at=made.created_at)
        self.store.commit([("creation", key, record)], [])
        self.by_key[key] = record
        return made
