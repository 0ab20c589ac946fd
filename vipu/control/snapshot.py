"""Reads that never hold the lock writes need: a versioned snapshot of the queue and the Pod, and paged listings.

Why a snapshot: `vipu queue` over 20,000 jobs orders, explains and converts for a quarter of a second, and `watch
squeue` runs all day; under the controller's lock, every submission waited for it. A snapshot copies what reads use
under the lock (pointer copies: a few milliseconds for 20,000 jobs) and everything else runs on the copy. Each
release of the lock counts a version up (lock.py); readers at the same version share one snapshot, so an idle
controller answers `vipu top`, Prometheus and a polling `vipu queue` without touching the lock at all.

Why pages (Google's AIP-158: page_size, page_token, next_page_token): one listing of 100,000 jobs is 100 MB of
protobuf. A listing is worked out once per snapshot and filter, kept as light rows (a page decorates only its own),
and a page token names that listing and an offset, so a client paging through it sees one moment, whatever changed
since. Listings are kept LISTING_KEPT_S, up to LISTED_ROWS_KEPT rows in all; a token whose listing is gone is
refused (FAILED_PRECONDITION), and the client starts again: a page from another moment could leave out a job.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, NamedTuple, TypeVar

from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.partition.ipu_status import (IpuStatus, MachineStatus, completing_mask, ipu_statuses, machine_state_counts,
                                       machine_statuses)
from vipu.partition.pod_state import PodState
from vipu.scheduler.view import QueueView

T = TypeVar("T")
DEFAULT_PAGE_SIZE = 1000  # what a caller that asks for no page size gets (AIP-158 leaves it to the server)
MAX_PAGE_SIZE = 10_000  # larger requests are refused naming page_size (docs/api.md: at most this many)
LISTING_KEPT_S = 600.0  # how long a listing is kept for its next pages
LISTED_ROWS_KEPT = 1_000_000  # rows of all the listings kept, at most (a few tens of MB)


@dataclass(frozen=True)
class Snapshot:
    version: int  # the lock's version it was taken at
    queue: QueueView
    pod: PodState  # a read copy: partitions, agents, allocations, failed IPUs
    available_mask: int  # IPUs a job could be placed on now (healthy, online, in no partition)
    allowed_masks: dict[str, int]  # allocation -> the IPUs its jobs may use

    # IPUs and machines read only with the queue's teardowns, so that no view can leave them out: the IPU views once
    # did, and showed a completing job's IPUs allocated while `vipu info -N` showed its machines comp.
    def ipu_statuses(self) -> list[IpuStatus]:
        return ipu_statuses(self.pod, self.queue.table.cleaning_mask)

    def machine_statuses(self, machines: Iterable[int] | None = None) -> list[MachineStatus]:
        return machine_statuses(self.pod, machines, self.queue.table.cleaning_mask)

    def machine_state_counts(self) -> Counter:
        return machine_state_counts(self.pod, self.queue.table.cleaning_mask)

    def completing_mask(self) -> int:
        return completing_mask(self.pod, self.queue.table.cleaning_mask)


class Page(NamedTuple, Generic[T]):
    items: list[T]
    next_page_token: str  # "" on the last page
    total: int  # items in the whole listing


class Listings:
    """Whole listings by (snapshot version, filter), kept for paging; thread-safe."""

    def __init__(self, paced: Callable[[Iterable], Iterable] = iter) -> None:
        self._kept: OrderedDict[tuple[int, str], tuple[float, list]] = OrderedDict()  # -> (made at, rows)
        self._rows = 0
        self._lock = threading.Lock()
        self._paced = paced  # how a listing is taken: a few rows at a time while writes come in (pacing.py)

    def page(self, current: Callable[[], Snapshot], key: str, make: Callable[[Snapshot], Iterable], page_size: int,
             page_token: str, snapshot: Snapshot | None = None, present: Callable = lambda row: row,
             fresh: bool = False) -> Page:
        """One page of the listing `make(snapshot)` named by `key` (the request's filters: a token is refused for
        another), each row shown as present(row). The first page comes from `snapshot` (default: `current()`), a
        later one from the listing its token names. `fresh`: the listing holds more than the snapshot (machines'
        counters), so a first page always makes it anew. A listing that fits one page is not kept."""
        if not 0 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgument(f"page_size is {page_size:,}; give 0 (the default, {DEFAULT_PAGE_SIZE:,}) to"
                                  f" {MAX_PAGE_SIZE:,}, and the next_page_token of each page for the rest")
        size = page_size or DEFAULT_PAGE_SIZE
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        if page_token:
            version, offset = _read_token(page_token, digest)
            listing = self._kept_listing((version, digest))
            if listing is None:
                raise ListingGone(f"page_token names a listing no longer kept (listings are kept"
                                  f" {LISTING_KEPT_S / 60:g} minutes, and fewer when many are taken at once): list"
                                  " again from the first page, without a page_token")
        else:
            snapshot = snapshot or current()
            version, offset = snapshot.version, 0
            listing = None if fresh else self._kept_listing((version, digest))
            if listing is None:
                listing = list(self._paced(make(snapshot)))
                if len(listing) > size:
                    self._keep((version, digest), listing)
        end = offset + size
        token = _token(version, end, digest) if end < len(listing) else ""
        return Page([present(row) for row in listing[offset:end]], token, len(listing))

    def _kept_listing(self, key: tuple[int, str]) -> list | None:
        with self._lock:
            self._expire()
            kept = self._kept.get(key)
            if kept is None:
                return None
            self._kept.move_to_end(key)
            return kept[1]

    def _keep(self, key: tuple[int, str], listing: list) -> None:
        with self._lock:
            if key in self._kept:
                self._rows -= len(self._kept.pop(key)[1])  # a fresh listing replaces the one of its moment
            self._kept[key] = (time.monotonic(), listing)
            self._rows += len(listing)
            while self._rows > LISTED_ROWS_KEPT and len(self._kept) > 1:
                self._drop()

    def _expire(self) -> None:
        while self._kept and time.monotonic() - next(iter(self._kept.values()))[0] > LISTING_KEPT_S:
            self._drop()

    def _drop(self) -> None:
        _, (_, rows) = self._kept.popitem(last=False)
        self._rows -= len(rows)


class ListingGone(FailedPrecondition):
    """A page token whose listing is no longer kept."""

    reason = "LISTING_EXPIRED"


def _token(version: int, offset: int, digest: str) -> str:
    raw = json.dumps([version, offset, digest], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_token(token: str, digest: str) -> tuple[int, int]:
    try:
        version, offset, made_for = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if not (isinstance(version, int) and isinstance(offset, int) and offset >= 0 and isinstance(made_for, str)):
            raise ValueError
    except (ValueError, TypeError):
        raise InvalidArgument("page_token is not one this controller gave; send the next_page_token of the previous"
                              " page, or none for the first page") from None
    if made_for != digest:
        raise InvalidArgument("page_token was given for a listing with other filters or options; repeat the first"
                              " request's with it, or start again without a token")
    return version, offset
