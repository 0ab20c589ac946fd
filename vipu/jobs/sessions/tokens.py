"""The open sessions by run token: what the DeviceService looks a caller's token up in.

Why a token per run: a program's run is given VIPU_RUN_TOKEN (a fresh 256-bit secret) and nothing else to reach its
IPUs; the token opens that run's session only (its partition's IPUs), and is forgotten when the run ends, whatever
ended it, so a program left running, or a copy of its environment, can do nothing more. Closing a session fails
its waiting calls at once and frees its tensors in the background (the machines may be slow, or gone); a session
opened on the same IPUs meanwhile waits for that before it first touches them (session.py). The registry holds
the controller's host memory for tensors (tensor_memory.py), which every session it opens counts its tensors in.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import TYPE_CHECKING

from vipu.errors import Unauthenticated
from vipu.jobs.sessions.tensor_memory import TensorMemory

if TYPE_CHECKING:  # the controller makes this registry at start; numpy and the fabric come with a program's first run
    from vipu.jobs.sessions.session import DeviceSession

log = logging.getLogger("vipu.sessions")


class Sessions:
    def __init__(self, memory: TensorMemory | None = None) -> None:
        self.memory = memory or TensorMemory()
        self._lock = threading.Lock()
        self._open: dict[str, DeviceSession] = {}
        self._freeing: list[DeviceSession] = []

    @staticmethod
    def new_token() -> str:
        """A run token: given to the program when its run starts, before its session opens (open())."""
        return secrets.token_urlsafe(32)

    def open(self, session: DeviceSession, token: str | None = None) -> str:
        """Register a run's session under `token` (a new one if None); returns the token."""
        token = token or self.new_token()
        with self._lock:
            self._freeing = [s for s in self._freeing if not s.freed.is_set()]
            session.after = [s for s in self._freeing if s.overlaps(session)]
            session.memory = self.memory
            self._open[token] = session
        return token

    def get(self, token: str | None) -> DeviceSession:
        with self._lock:
            session = self._open.get(token) if token else None
        if session is None:
            raise Unauthenticated("no open session has this run token: the run has ended, or the token is not the"
                                  " VIPU_RUN_TOKEN the controller gave the run; use the SDK from inside a running"
                                  " job (vipu.sdk.attach())")
        return session

    def close(self, token: str, why: str) -> DeviceSession | None:
        """End the session of `token` (if still open): its calls fail with `why`, its tensors are freed."""
        with self._lock:
            session = self._open.pop(token, None)
            if session is not None:
                self._freeing.append(session)
        if session is not None:
            session.close(why)
            try:
                threading.Thread(target=self._free, args=(session,), name=f"vipu-free-{session.scope}",
                                 daemon=True).start()
            except RuntimeError:  # no thread to be had (memory short): freed here, or never (its run must end)
                log.warning("job %s: no thread to free the tensors of run %s in: freed now", session.job_id,
                            session.run)
                self._free(session)
        return session

    @staticmethod
    def _free(session: DeviceSession) -> None:
        try:
            session.free_all()
        except Exception:  # noqa: BLE001 - a machine gone mid-free: nothing of it is left to free
            log.exception("job %s: freeing the tensors of run %s failed", session.job_id, session.run)

    def close_all(self, why: str) -> None:
        with self._lock:
            tokens = list(self._open)
        for token in tokens:
            self.close(token, why)
