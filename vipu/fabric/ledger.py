"""GwLinkLedger: which collectives are using each GW-Link direction at once, so each gets its share.

Why only GW-Links: partitions are aligned blocks that never share an IPU, so they never share an IPU-Link
(hardware/links.py says why); a partition's IPU-Link traffic cannot slow another's. GW-Links are different: every
collective that crosses ILDs from a machine goes through that machine's two GW-Links. A partition spanning Pod64s
runs its gradient allreduce over them, and so does each data-parallel group across the Pod64s (Group.across_ilds:
e.g. GPT-3 on a Pod256 with replicas r=4 has 64 of them, four per machine). Collectives running at the same time
over the same GW-Link direction split its 12.5 GB/s: a link held by u collectives gives each bandwidth / u.

The model is deliberately simple and pessimistic: a collective priced while others hold its links is assumed to
overlap them for its whole duration (no time-sliced sharing), which bounds the slow-down from above. Holders are
keyed (a job's id, a collective's name) so a caller can register a long-running collective before pricing others; a
collective priced with a ledger gets bandwidth / (1 + other holders) on each GW-Link it uses, and holds its own
links (under `ledger_key`, or a fresh key) while it runs, so collectives priced meanwhile see it. The switches of a
Pod256 are assumed non-blocking (hardware/links.py), so only shared GW-Links, not shared switches, count.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from typing import Hashable, Iterable, Iterator

from vipu.errors import AlreadyExists, NotFound
from vipu.fabric.group import Group
from vipu.hardware.links import LinkId


class GwLinkLedger:
    def __init__(self) -> None:
        self._held: dict[Hashable, frozenset[LinkId]] = {}
        self._users: Counter[LinkId] = Counter()
        self._lock = threading.Lock()

    def hold(self, key: Hashable, links: Iterable[LinkId]) -> None:
        links = frozenset(link for link in links if link[0] != "ipu")
        with self._lock:
            if key in self._held:
                raise AlreadyExists(f"collective {key!r} already holds GW-Links; release it first")
            self._held[key] = links
            self._users.update(links)

    def release(self, key: Hashable) -> None:
        with self._lock:
            try:
                links = self._held.pop(key)
            except KeyError:
                raise NotFound(f"collective {key!r} holds no GW-Links") from None
            self._users.subtract(links)
            for link in links:
                if self._users[link] <= 0:
                    del self._users[link]

    @contextmanager
    def holding(self, key: Hashable, links: Iterable[LinkId]) -> Iterator[None]:
        self.hold(key, links)
        try:
            yield
        finally:
            self.release(key)

    def users(self, link: LinkId, excluding: Hashable | None = None) -> int:
        """Collectives using this GW-Link direction now (0 if none), not counting the holder `excluding`."""
        mine = excluding is not None and link in self._held.get(excluding, ())
        return self._users.get(link, 0) - mine

    def holders(self) -> list[Hashable]:
        return list(self._held)


def gw_links_of(group: Group) -> frozenset[LinkId]:
    """The GW-Link directions a group's cross-ILD collectives use: what a caller holds for a collective it keeps
    running while pricing others (none for a group inside one ILD)."""
    if group.ilds == 1:
        return frozenset()
    return frozenset((direction, *group.links.gw_link(ipu)) for ipu in group.ipus for direction in ("gw-out", "gw-in"))
