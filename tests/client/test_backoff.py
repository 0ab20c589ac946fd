"""Retries while the controller does not answer: exponential steps, capped, with jitter, never past the call's
timeout, ending in the same 'cannot reach' error as before. The clock, the sleep and the randomness are injected."""

from __future__ import annotations

import grpc
import pytest

from tests.cli.test_cli_settings import closed_port
from tests.cli.test_connection import Down
from vipu.client import ApiError, Settings
from vipu.client.backoff import Backoff
from vipu.client.caller import REQUEST_ID, Caller


@pytest.mark.parametrize("random, want", [
    (0.0, [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]),  # half of each step at least: never a busy loop
    (1.0, [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]),  # a whole step at most, capped at 2 s
    (0.5, [0.075, 0.15, 0.3, 0.6, 1.2, 1.5, 1.5]),
])
def test_steps_double_up_to_the_cap_with_half_of_each_random(random, want):
    backoff = Backoff(random=lambda: random)
    assert [round(backoff.delay(n), 6) for n in range(7)] == want
    assert backoff.delay(10_000) == backoff.delay(6)  # a long outage does not overflow


class FakeTime:
    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_an_unanswered_call_is_retried_with_backoff_until_its_timeout_then_fails_as_before():
    time = FakeTime()
    caller = Caller(Settings("127.0.0.1", closed_port(), "u", None, None), timeout=5,
                    backoff=Backoff(random=lambda: 1.0), clock=time.clock, sleep=time.sleep)
    tries, waited = [], []

    def unanswered(request, timeout, metadata):
        tries.append((time.now, dict(metadata)[REQUEST_ID]))
        time.now += 0.01  # a refused connection answers at once
        raise Down()

    with pytest.raises(ApiError) as failed:
        caller.call(unanswered, None, retry=True, waiting=lambda: waited.append(time.now))
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert str(failed.value.message).startswith(f"cannot reach the V-IPU controller at {caller.address}")
    assert len(waited) == 1  # "is not answering; retrying for up to 5 s", once
    # 0.1, 0.2, 0.4, 0.8, 1.6, then what is left before the deadline (less the last try's 0.25 s)
    assert time.slept[:5] == [0.1, 0.2, 0.4, 0.8, 1.6]
    assert len(time.slept) == 6 and time.slept[5] < 2.0 and time.now <= 1000.0 + 5
    assert len({request_id for _, request_id in tries}) == 1  # one call: its retries carry the same request id


def test_a_call_that_answers_on_a_retry_returns_its_reply_and_a_call_without_retry_fails_at_once():
    time = FakeTime()
    caller = Caller(Settings("127.0.0.1", closed_port(), "u", None, None), timeout=5,
                    backoff=Backoff(random=lambda: 0.0), clock=time.clock, sleep=time.sleep)
    answers = iter([Down(), Down(), "reply"])

    def flaky(request, timeout, metadata):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert caller.call(flaky, None, retry=True) == "reply"
    assert time.slept == [0.05, 0.1]
    def down(request, timeout, metadata):
        raise Down()

    with pytest.raises(ApiError):
        caller.call(down, None)
    assert time.slept == [0.05, 0.1]  # not idempotent: no retry, no wait
