"""Per-user request rate limits at the edge, as Slurm's slurmctld rate limiting (SlurmctldParameters=rl_enable):
each user has a bucket of `burst` tokens, refilled at `rate` a second; a request takes one, and a user with none
left is refused RESOURCE_EXHAUSTED with when to retry. Off unless vipu-server --rate-limit is given.

Why per user and not per connection: one user's loop of `vipu queue` must not slow everyone else's submits, and a
user opens a new connection per command. The user is who the call says it is (its access key under --secure);
without --secure that is any name a caller gives, so the limit then holds only for callers that do not lie. The
table of buckets stays small: a bucket that has refilled is the same as none, and is dropped.
Health and reflection are never limited.
"""

from __future__ import annotations

import threading
import time

import grpc

from vipu.errors import ResourceExhausted
from vipu.server.auth import OPEN_PREFIXES, USER_METADATA, bearer
from vipu.server.status import abort


MAX_BUCKETS = 10_000  # past this many users, refilled buckets are dropped (then the oldest, should that not do)


class Buckets:
    """Token buckets by user; `now` is injected for tests."""

    def __init__(self, rate: float, burst: int, now=time.monotonic):
        self.rate, self.burst, self.now = rate, burst, now
        self._tokens: dict[str, tuple[float, float]] = {}  # user -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, user: str) -> float:
        """0 if `user` may go on (one token taken), else the seconds until a token is back."""
        with self._lock:
            now = self.now()
            tokens, at = self._tokens.get(user, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            allowed = tokens >= 1
            self._tokens[user] = (tokens - 1 if allowed else tokens, now)
            if len(self._tokens) > MAX_BUCKETS:
                self._prune(now)
            return 0.0 if allowed else (1 - tokens) / self.rate

    def _prune(self, now: float) -> None:
        full = self.burst / self.rate  # seconds for an empty bucket to refill
        self._tokens = {u: (t, at) for u, (t, at) in self._tokens.items() if now - at < full}
        if len(self._tokens) > MAX_BUCKETS:
            newest = sorted(self._tokens.items(), key=lambda item: item[1][1])[-MAX_BUCKETS // 2:]
            self._tokens = dict(newest)


class RateLimitInterceptor(grpc.ServerInterceptor):
    def __init__(self, plane, buckets: Buckets):
        self.plane, self.buckets = plane, buckets

    def _user(self, metadata) -> str:
        key = bearer(metadata)
        if key is not None:
            user = self.plane.user_for_key(key)
            return user.name if user is not None else "(unknown key)"
        return next((value for k, value in metadata or () if k == USER_METADATA), "") or "(anonymous)"

    def intercept_service(self, continuation, details):
        if details.method.startswith(OPEN_PREFIXES):
            return continuation(details)
        user = self._user(details.invocation_metadata)
        wait = self.buckets.take(user)
        if not wait:
            return continuation(details)
        error = ResourceExhausted(
            f"user {user} sends requests faster than this controller allows ({self.buckets.rate:g} a second, in"
            f" bursts of up to {self.buckets.burst}); retry in {wait:.1f} s", reason="RATE_LIMITED")

        def refuse(request, context):
            abort(context, error)

        return grpc.unary_unary_rpc_method_handler(refuse)
