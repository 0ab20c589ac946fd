"""The control plane's promises to its edges: a slow admission check and a slow listing hold up no one else, reads
see one moment, and list calls page through it."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from vipu.access import ANYONE
from vipu.control import snapshot
from vipu.control.job_ops import SubmitRequest
from vipu.control.snapshot import ListingGone
from vipu.control.startup import open_plane
from vipu.control.workloads import builtin_kinds
from vipu.errors import InvalidArgument
from vipu.scheduler.job_filter import NO_FILTER
from vipu.scheduler.view import QueueView

TINY = (Path(__file__).resolve().parents[2] / "examples" / "tiny_dp.yaml").read_text()
HELD = b'{"ipus": 1, "time_limit": "10m", "hold": true}'
WAIT_S = 30  # a bound on waits that only a broken plane reaches


def submit(plane, spec=HELD, **overrides) -> list[int]:
    [done] = plane.jobs.submit([SubmitRequest(spec, overrides)], ANYONE)
    return [job.id for job in done.jobs]


@pytest.fixture
def gate():
    """An event the test sets, and one set when the slow part is reached."""
    return threading.Event(), threading.Event()


@pytest.fixture
def plane(tmp_path, gate):
    release, reached = gate
    kinds = builtin_kinds()
    check = kinds["train"].admit

    def slow_admit(spec, pod):  # a planner search that takes as long as the test says
        reached.set()
        assert release.wait(WAIT_S)
        check(spec, pod)

    plane = open_plane("bow-pod16", tmp_path, "127.0.0.1", 8090,
                       kinds={**kinds, "train": replace(kinds["train"], admit=slow_admit)})
    yield plane
    release.set()
    plane.store.close()


def in_thread(target) -> tuple[threading.Thread, list]:
    out: list = []
    thread = threading.Thread(target=lambda: out.append(target()), daemon=True)
    thread.start()
    return thread, out


def test_a_slow_admission_check_delays_no_other_submission_or_listing(plane, gate):
    release, reached = gate
    slow, got = in_thread(lambda: submit(plane, TINY))
    assert reached.wait(WAIT_S)  # the train spec is in its admission check, outside the lock
    assert submit(plane) == [1]  # meanwhile another submission is queued, and the queue listed
    assert [x.id for x in plane.job_views.queue(ANYONE).items] == [1]
    assert slow.is_alive()
    release.set()
    slow.join(WAIT_S)
    assert got == [[2]]


def test_a_slow_listing_delays_no_submission(plane, monkeypatch, gate):
    release, reached = gate
    listed = QueueView.queue_rows

    def slow_queue(self, *args, **kwargs):  # ordering and explaining a huge queue
        reached.set()
        assert release.wait(WAIT_S)
        return listed(self, *args, **kwargs)

    submit(plane)
    monkeypatch.setattr(QueueView, "queue_rows", slow_queue)
    lister, got = in_thread(lambda: plane.job_views.queue(ANYONE).items)
    assert reached.wait(WAIT_S)
    assert submit(plane) == [2] and lister.is_alive()  # the listing holds no lock the submission needs
    release.set()
    lister.join(WAIT_S)
    assert [x.id for x in got[0]] == [1]  # the moment it was asked at: job 2 came later


def test_reads_share_a_snapshot_until_something_changes(plane):
    first = plane.read()
    assert plane.read() is first
    submit(plane)
    second = plane.read()
    assert second is not first and second.version > first.version
    assert 1 in second.queue.table.jobs and 1 not in first.queue.table.jobs  # an old snapshot stays as it was


def test_pages_of_one_listing_hold_every_job_once_while_jobs_come_and_go(plane):
    plane.jobs.submit([SubmitRequest(HELD, {}) for _ in range(2500)], ANYONE)
    first = plane.job_views.queue(ANYONE, page_size=1000)
    assert (len(first.items), first.total) == (1000, 2500) and first.next_page_token
    submit(plane)  # job 2501 arrives, and job 1 is cancelled, between the pages
    plane.jobs.cancel([1], NO_FILTER, False, ANYONE)
    second = plane.job_views.queue(ANYONE, page_size=1000, page_token=first.next_page_token)
    third = plane.job_views.queue(ANYONE, page_size=1000, page_token=second.next_page_token)
    assert third.next_page_token == ""
    ids = [x.id for page in (first, second, third) for x in page.items]
    assert ids == list(range(1, 2501))  # the moment of the first page, whole
    assert plane.job_views.queue(ANYONE).total == 2500  # a new listing: 2..2501


def test_a_page_token_is_refused_for_other_filters_or_when_made_up(plane):
    plane.jobs.submit([SubmitRequest(HELD, {}) for _ in range(3)], ANYONE)
    token = plane.job_views.queue(ANYONE, page_size=1).next_page_token
    with pytest.raises(InvalidArgument, match="page_token was given for a listing with other filters"):
        plane.job_views.queue(ANYONE, users=["bob"], page_size=1, page_token=token)
    with pytest.raises(InvalidArgument, match="page_token is not one this controller gave"):
        plane.job_views.queue(ANYONE, page_token="bm90IGEgdG9rZW4")
    with pytest.raises(InvalidArgument, match="page_size is -1"):
        plane.job_views.queue(ANYONE, page_size=-1)


def test_a_page_whose_listing_is_no_longer_kept_is_refused_so_no_job_is_left_out(plane, monkeypatch):
    """Regression: the next page came from a fresh listing at the same offset, and jobs ahead of it that had started
    or ended moved the live ones behind it out of every page."""
    plane.jobs.submit([SubmitRequest(HELD, {}) for _ in range(4)], ANYONE)
    first = plane.job_views.queue(ANYONE, page_size=2)
    monkeypatch.setattr(snapshot, "LISTING_KEPT_S", 0.0)  # as after ten quiet minutes
    with pytest.raises(ListingGone, match="page_token names a listing no longer kept"):
        plane.job_views.queue(ANYONE, page_size=2, page_token=first.next_page_token)


def test_listings_kept_are_bounded_by_their_rows(plane, monkeypatch):
    monkeypatch.setattr(snapshot, "LISTED_ROWS_KEPT", 5)
    plane.jobs.submit([SubmitRequest(HELD, {}) for _ in range(3)], ANYONE)
    mine = plane.job_views.queue(ANYONE, page_size=1)
    plane.job_views.queue(ANYONE, users=["someone"], page_size=1)  # another listing: 3 + 0 rows, both kept
    assert plane.job_views.queue(ANYONE, page_size=1, page_token=mine.next_page_token).items[0].id == 2
    plane.job_views.history(ANYONE, page_size=1)  # and a third (0 rows)
    submit(plane)
    plane.job_views.queue(ANYONE, page_size=1)  # 4 rows more: over 5, the oldest goes
    with pytest.raises(ListingGone):
        plane.job_views.queue(ANYONE, page_size=1, page_token=mine.next_page_token)


def test_an_unpaged_caller_gets_the_default_page(plane):
    plane.jobs.submit([SubmitRequest(HELD, {}) for _ in range(1001)], ANYONE)
    page = plane.job_views.queue(ANYONE)
    assert len(page.items) == 1000 and page.total == 1001 and page.next_page_token


def test_an_idle_controller_keeps_its_snapshot(plane):
    """The loop steps only when woken or at an event: readers of an idle controller share one snapshot, taken
    without the lock."""
    submit(plane, b'{"ipus": 1, "time_limit": "10m", "workload": {"kind": "sleep", "duration": "2m"}}')
    plane.step()
    assert plane.loop.wait_after(plane.now()) == pytest.approx(120, abs=1)  # until the job ends, and no step
    first = plane.read()
    assert plane.read() is first
    submit(plane)  # a change: a new snapshot
    assert plane.read() is not first


def test_a_mass_cancel_is_one_store_transaction_and_checks_each_job_once(plane, monkeypatch):
    """walk26f: a cancel of 49,000 jobs missed the CLI's deadline. The jobs the filters chose were checked against
    them a second time; what is left is a pass over them and one write."""
    from vipu.scheduler.job_filter import JobFilter

    done = plane.jobs.submit([SubmitRequest(HELD, {"user": "u"})] * 3000, ANYONE)
    ids = [job.id for d in done for job in d.jobs]
    [other] = submit(plane, user="v")
    commits, checked = [], []
    commit, matches = plane.store.commit, JobFilter.matches
    monkeypatch.setattr(plane.store, "commit", lambda puts, deletes: commits.append(1) or commit(puts, deletes))
    monkeypatch.setattr(JobFilter, "matches", lambda self, job: (self and checked.append(job.id)) or matches(self, job))
    cancelled = plane.jobs.cancel([], JobFilter(users=frozenset({"u"})), False, ANYONE)
    assert [job.id for job in cancelled] == ids and {job.state.value for job in cancelled} == {"CANCELLED"}
    assert len(commits) == 1 and sorted(checked) == sorted([*ids, other])
    assert list(plane.scheduler.table.pending) == [other]


def test_a_submit_of_many_specs_looks_up_each_owners_uid_once(plane, monkeypatch):
    """rev40: every spec of a 10,000-spec submit looked its owner's uid up under the controller's lock; getpwnam of
    a name with no account scans the accounts (about 80 us here), so most of a second of the lock went to it."""
    asked, uid = [], plane.uid
    monkeypatch.setattr(plane, "uid", lambda user: asked.append(user) or uid(user))
    done = plane.jobs.submit([SubmitRequest(HELD, {"user": "no-such-account-rev40"})] * 3000
                             + [SubmitRequest(HELD, {"user": "root"})], ANYONE)
    jobs = [job for d in done for job in d.jobs]
    assert sorted(asked) == ["no-such-account-rev40", "root"]
    assert {job.uid for job in jobs[:-1]} == {None} and jobs[-1].uid == 0
