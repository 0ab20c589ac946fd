"""The DeviceService's way into the control plane: a run token opens its run's session, and nothing else.

Why the control plane holds the sessions: it starts and ends the runs (the `command` kind's runner opens a session
when a run starts and closes it when the run ends, whatever ended it), and the edges reach the domain only through
it. A session's own operations (vipu/jobs/sessions/session.py) are the domain the servicer then calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vipu.jobs.sessions.session import DeviceSession
    from vipu.jobs.sessions.tokens import Sessions


class DeviceOps:
    def __init__(self, sessions: Sessions):
        self._sessions = sessions

    def session(self, token: str | None) -> DeviceSession:
        """The open session of the run whose VIPU_RUN_TOKEN this is; Unauthenticated for any other token."""
        return self._sessions.get(token)

    def budget_tensors(self, nbytes: int) -> None:
        """The controller's host memory for programs' tensors (vipu-server --tensor-memory; tensor_memory.py)."""
        self._sessions.memory.budget = nbytes
