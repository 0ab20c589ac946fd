"""The state lock's waits on the store: an RPC answers about a stalled disk before its caller's deadline."""

from __future__ import annotations

import time

import pytest

from tests.test_store import stalled, user
from vipu.control import lock
from vipu.control.callers import Call, serving
from vipu.control.lock import StateLock
from vipu.store import Dropped, Store


def test_an_rpc_waits_for_the_store_until_just_before_its_deadline_and_never_less_than_the_floor():
    assert lock._answer_in() is None  # no RPC (the loop, a run's end): the store's own write timeout
    with serving(Call("r", "m", "u", answer_by=time.monotonic() + 9)):
        assert 8 < lock._answer_in() <= 9 - lock.ANSWER_MARGIN_S
    with serving(Call("r", "m", "u", answer_by=time.monotonic() + 1)):
        assert lock._answer_in() == lock.MIN_WAIT_S  # a short deadline does not make a busy store a failed one


def test_a_change_behind_a_stalled_write_is_refused_in_time_saying_nothing_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "MIN_WAIT_S", 0.05)
    store = Store(tmp_path / "s.db", write_timeout_s=60)
    store.on_dropped = lambda: None
    state = StateLock(store)
    with stalled(store) as inside:
        with store.batch():
            store.commit([("user", "stuck", user("stuck"))], [])
        assert inside.wait(10)  # a transaction stuck in the kernel
        started = time.monotonic()
        with serving(Call("r", "m", "u", answer_by=started + lock.ANSWER_MARGIN_S + 0.2)):
            # the wait is what the caller's deadline left: 0.2 s, a little less on a loaded machine
            waited = r"has not finished a write in 0\.(1[5-9]|2)\d* s .*so nothing changed: fix the"
            with pytest.raises(Dropped, match=waited):
                with state:
                    store.commit([("user", "a", user("a"))], [])
        assert time.monotonic() - started < 30  # the caller's deadline, not the store's 60 s
        assert not store.writable
