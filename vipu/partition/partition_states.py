"""The partition lifecycle: one transition table, one function that enforces it.

PENDING    placed and recorded; its IPUs are being brought up (agents configure routing, reset the IPUs)
ACTIVE     ready: a job (or poprun) may attach to it
RESETTING  `vipu reset partition`: the IPUs are being reset; back to ACTIVE when done
REMOVING   `vipu remove partition`: its IPUs are being released; then the partition is gone (REMOVED)
FAILED     an IPU, IPU-Link or machine under it failed; reset (once healthy) or remove it
REMOVED    terminal; the record is deleted from the store
"""

from __future__ import annotations

from enum import Enum

from vipu.errors import FailedPrecondition


class PartitionState(str, Enum):
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    RESETTING = "RESETTING"
    REMOVING = "REMOVING"
    FAILED = "FAILED"
    REMOVED = "REMOVED"


S = PartitionState

TRANSITIONS: dict[PartitionState, dict[PartitionState, str]] = {
    S.PENDING: {
        S.ACTIVE: "its agents reported the IPUs configured",
        S.FAILED: "an IPU or link failed while it was being brought up",
        S.REMOVING: "removed before it became active",
    },
    S.ACTIVE: {
        S.RESETTING: "vipu reset partition",
        S.REMOVING: "vipu remove partition, or its job ended",
        S.FAILED: "an IPU, IPU-Link or machine under it failed",
    },
    S.RESETTING: {
        S.ACTIVE: "reset finished",
        S.FAILED: "an IPU failed during the reset",
    },
    S.FAILED: {
        S.RESETTING: "reset once its IPUs are healthy again",
        S.REMOVING: "removed; its healthy IPUs go back to the pool",
    },
    S.REMOVING: {
        S.REMOVED: "its IPUs were released",
    },
    S.REMOVED: {},
}


def check_transition(name: str, current: PartitionState, new: PartitionState) -> None:
    if new not in TRANSITIONS[current]:
        allowed = ", ".join(s.value for s in TRANSITIONS[current]) or "none (terminal)"
        raise FailedPrecondition(
            f"partition {name} is {current.value} and cannot become {new.value} (allowed from {current.value}: {allowed})"
        )
