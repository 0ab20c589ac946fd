"""A stalled disk as the store meets it: a transaction stuck in the kernel (tests/test_store.py's stalled()), a
read that does not come back. Callers answer in time, saying what became of their change; a stop does not wait for
the disk. tests/server/test_store_stall.py freezes a real filesystem."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from tests.control.test_rollback import wait_until
from tests.test_store import held, stalled, user
from vipu.errors import Unavailable
from vipu.partition.admin_records import User
from vipu.store import Dropped, Store


def test_a_write_that_waits_past_the_timeout_fails_unavailable_and_health_hears_it(tmp_path):
    """As with a stalled disk: a transaction is stuck inside its write, and a write queued behind it gives up in
    time, dropped; once the stuck one ends, the store writes again by itself."""
    store = Store(tmp_path / "s.db", write_timeout_s=0.2)
    store.load({"user": User})
    heard = []
    store.on_health = heard.append
    with stalled(store) as inside:
        with store.batch():
            store.commit([("user", "a", user("a"))], [])
        assert inside.wait(10)
        with pytest.raises(Dropped, match="has not finished a write in 0.2 s .*, so nothing changed: fix the disk"):
            store.commit([("user", "b", user("b"))], [])  # not in the stuck transaction: never written
        assert heard == [False] and not store.writable and store.write_failures == 1
    deadline = time.monotonic() + 10  # the retry thread drops it once the stuck write is done, and writes a probe
    while heard != [False, True] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert heard == [False, True]
    assert store.load({"user": User}) == [("user", user("a"))]  # the stuck one ended well: kept


def test_a_write_in_the_stuck_transaction_is_not_known_and_the_answer_says_so(tmp_path):
    store = Store(tmp_path / "s.db", write_timeout_s=0.2)
    with stalled(store) as inside:
        with pytest.raises(Unavailable, match="whether this change is stored is not known until that write ends"
                           r".*check with `vipu queue` or `vipu show job` before retrying") as e:
            store.commit([("user", "a", user("a"))], [])
        assert inside.is_set() and not isinstance(e.value, Dropped)
        assert not store.writable


def test_the_stuck_write_ending_late_is_logged_naming_its_jobs_and_the_memory_rebuilt(tmp_path, caplog):
    store = Store(tmp_path / "s.db", write_timeout_s=0.2)
    store.load({"user": User})
    said = "the write that stalled has ended: jobs 7, whose callers were told it was not known, are stored"
    with caplog.at_level(logging.WARNING, logger="vipu.store"):
        with stalled(store):
            with pytest.raises(Unavailable, match="not known"):
                store.commit([("job", "7", user("seven")), ("user", "a", user("a"))], [])
        assert wait_until(lambda: said in caplog.text)
    # it ended after its caller was answered: the memory is rebuilt (on_dropped, by the retry thread) from the
    # database that now holds it, and until then nothing more is written
    assert wait_until(lambda: not store.failed)
    assert store.get("user", "a", User) == user("a")


def test_a_history_read_the_disk_does_not_answer_fails_in_time_and_the_next_at_once(tmp_path):
    store = Store(tmp_path / "s.db", write_timeout_s=0.2)
    heard = []
    store.on_health = heard.append
    assert store.history_count() == 0  # (the reading thread exists now)
    go = threading.Event()
    store._reads.submit(go.wait)  # a read stuck in the kernel
    try:
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"has not answered a read of the job history in [0-9.]+ s .*so this was"
                                              r" not done; the live queue still answers"):
            store.history_count()
        assert time.monotonic() - started < 5 and heard == [False] and not store.writable
        store._reads._busy_since = store._read_given_up_at - 0.01  # as on a loaded machine: it began late
        queued = []
        submit = store._reads.submit
        store._reads.submit = lambda work: queued.append(work) or submit(work)
        with pytest.raises(Unavailable, match="has not answered a read"):
            store.history_keys()
        assert queued == []  # behind the stuck read: refused at once, not queued to wait its turn
    finally:
        go.set()


def test_a_close_waits_for_a_stuck_write_no_longer_than_the_write_timeout(tmp_path):
    store = Store(tmp_path / "s.db", write_timeout_s=0.3)
    with held(store):
        started = time.monotonic()
        assert store.close() is False
        assert time.monotonic() - started < 5
    again = Store(tmp_path / "s.db")
    assert again.close() is True
