"""What the Pod could ever hold, during one walk: a job fits no moment at all when its allocation's healthy IPUs
have no aligned block of its size, or when none frees up even once every scheduler job has ended. Both depend only
on the walk's snapshot, so each answer is worked out once per (size, allowed mask) and kept."""

from __future__ import annotations

from vipu.scheduler.bits import block, has_block
from vipu.scheduler.policies.base import NODE_NOT_AVAIL, PARTITION_LIMIT, PendingInfo, QueuedJob, ScheduleRequest

_PARTITION_LIMIT, _NOT_AVAIL = PendingInfo(PARTITION_LIMIT), PendingInfo(NODE_NOT_AVAIL)


class Capacity:
    __slots__ = ("r", "total", "full", "healthy", "_feasible", "_ever", "_eventually", "_offline")

    def __init__(self, request: ScheduleRequest, full: int, healthy: int):
        self.r, self.total, self.full, self.healthy = request, request.total_ipus, full, healthy
        self._feasible: dict[tuple[int, int], bool] = {}  # (size, id(allowed)) -> can an empty, healthy Pod hold it
        self._ever: dict[tuple[int, int], bool] = {}  # (size, id(allowed)) -> does some moment hold such a job
        self._eventually: int | None = None
        self._offline: int | None = None

    def feasible(self, size: int, allowed: int) -> bool:
        key = (size, id(allowed))  # (see _Walk.tail: a mask is hashed digit by digit, the walk's masks stay put)
        ok = self._feasible.get(key)
        if ok is None:
            ok = self._feasible[key] = has_block(self.healthy & allowed, size, self.total)
        return ok

    def ever(self, size: int, allowed: int) -> bool:
        """Does some moment hold a job of `size` in `allowed` (once every scheduler job has ended)?"""
        key = (size, id(allowed))
        ok = self._ever.get(key)
        if ok is None:
            ok = self._ever[key] = has_block(self.eventually() & allowed, size, self.total)
        return ok

    def eventually(self) -> int:
        """IPUs free once every scheduler job has ended and every run torn down (partitions made by hand and failed
        IPUs stay out)."""
        if self._eventually is None:
            acc = self.r.running_mask
            if acc is None:
                acc = 0
                for r in self.r.running:
                    acc |= block(r.first_ipu, r.ipus)
            for _, first, ipus in self.r.teardowns:
                acc |= block(first, ipus)
            self._eventually = (self.r.available_mask | acc) & self.healthy
        return self._eventually

    def infeasible(self, job: QueuedJob, allowed: int | None) -> PendingInfo:
        """Why no moment can hold the job: PartitionNodeLimit if its allocation is too small for it even with every
        IPU out of service (failed, drained, agent missing) back; else ReqNodeNotAvail (IPUs it needs are failed or
        drained; or its allocation is gone)."""
        if allowed is not None:
            if self._offline is None:  # failed IPUs, and IPUs no allocation may use now (drained, no agent)
                online = self.full if self.r.allowed_masks is None else 0
                for mask in (self.r.allowed_masks or {}).values():
                    online |= mask
                self._offline = self.full & ~(online & self.healthy)
            if not has_block((allowed | self._offline) & self.full, job.ipus, self.total):
                return _PARTITION_LIMIT
        return _NOT_AVAIL
