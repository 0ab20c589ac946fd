"""Several submits as one (Scheduler.submit_many): the same jobs as one by one, stored in one commit, or none."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vipu.errors import AlreadyExists, InvalidArgument, ResourceExhausted
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.job_spec import parse_spec
from vipu.scheduler.submission import Submission

from tests.scheduler.builders import RecordingJournal, make, spec


def test_one_commit_stores_every_job_and_the_next_id(journal):
    s = make(journal=journal)
    done = s.submit_many([Submission(spec()), Submission(spec(array="0-2")), Submission(spec(ipus=4))], now=3)
    assert [[j.id for j in d.jobs] for d in done] == [[1], [2, 3, 4], [5]]
    assert {j.array_job_id for j in done[1].jobs} == {2}
    (puts, _), = journal.commits
    assert [n for k, n, _ in puts if k == "job"] == ["1", "2", "3", "4", "5"]
    assert puts[-1][2].next_job_id == 6
    assert s.submit(spec(), now=4)[0].id == 6


def test_a_refused_spec_queues_none_and_is_named_by_place_and_source(journal):
    s = make(journal=journal)
    batch = [Submission(spec(), source="a.yaml"), Submission(spec(ipus=3), source="b.yaml"), Submission(spec())]
    with pytest.raises(InvalidArgument) as refused:
        s.submit_many(batch, now=0)
    assert refused.value.message.startswith("spec 2 of 3 (b.yaml): ipus")
    assert refused.value.message.endswith("nothing was queued")
    assert journal.commits == [] and s.table.jobs == {}
    assert s.submit(spec(), now=1)[0].id == 1  # no id was used up


def test_a_single_submission_keeps_its_message_bare(journal):
    s = make(journal=journal)
    with pytest.raises(InvalidArgument) as refused:
        s.submit_many([Submission(spec(ipus=3), source="a.yaml")], now=0)
    assert refused.value.message.startswith("ipus")


def test_request_ids_return_earlier_jobs_and_may_not_repeat_within_a_call(journal):
    s = make(journal=journal)
    first = s.submit(spec(), now=0, request_id="r1")
    done = s.submit_many([Submission(spec(), "r1"), Submission(spec(), "r2")], now=1)
    assert (done[0].jobs, done[0].duplicate) == (first, True)
    assert ([j.id for j in done[1].jobs], done[1].duplicate) == ([2], False)
    with pytest.raises(InvalidArgument, match="spec 2 of 2: request_id 'r3' was given to spec 1 too"):
        s.submit_many([Submission(spec(), "r3"), Submission(spec(), "r3")], now=2)
    with pytest.raises(AlreadyExists, match="spec 1 of 2"):
        s.submit_many([Submission(spec(ipus=2), "r1"), Submission(spec())], now=2)
    assert sorted(s.table.jobs) == [1, 2]


def test_a_retry_typed_otherwise_is_the_same_submit_but_a_comment_is_not():
    """The command line (submit_line) is how a submit was sent, not what it asks: a retry that adds --json gets the
    jobs of the first; a different --comment is a different spec."""
    s = make()
    [first] = s.submit(spec(submit_line="vipu submit --request-id r1 job.yaml"), now=0, request_id="r1")
    again = s.submit(spec(submit_line="vipu submit --request-id r1 job.yaml --json"), now=1, request_id="r1")
    assert [j.id for j in again] == [first.id] and again[0].spec.submit_line == first.spec.submit_line
    with pytest.raises(AlreadyExists, match="request_id 'r1' was already used for job 1 with a different spec"):
        s.submit(spec(submit_line="vipu submit", comment="other"), now=2, request_id="r1")


def test_the_queue_limit_counts_the_earlier_specs_of_the_call():
    s = make(max_jobs=4)
    s.submit(spec(), now=0)
    with pytest.raises(ResourceExhausted, match="spec 2 of 2: the queue holds 1 jobs, the specs before this one add 2, and this submit adds 2"):
        s.submit_many([Submission(spec(array="0-1")), Submission(spec(array="0-1"))], now=1)
    assert sorted(s.table.jobs) == [1]


def test_a_spec_may_depend_only_on_jobs_stored_before_the_call():
    s = make()
    with pytest.raises(InvalidArgument, match="spec 2 of 2: dependency names job 1, which this same call queues"):
        s.submit_many([Submission(spec()), Submission(spec(dependency="afterok:1"))], now=0)


SPEC = st.fixed_dictionaries({"ipus": st.sampled_from([1, 2, 4, 8]), "hold": st.booleans()},
                              optional={"array": st.sampled_from(["0-2", "1,5"])}).map(lambda f: spec(**f))
SPECS = st.lists(SPEC, min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(SPECS)
def test_many_at_once_stores_what_one_by_one_would(specs):
    one, many = RecordingJournal(), RecordingJournal()
    a, b = make(journal=one), make(journal=many)
    for x in specs:
        a.submit(x, now=7)
    b.submit_many([Submission(x) for x in specs], now=7)
    assert one.records == many.records
    assert list(a.view().queue()) == list(b.view().queue())


def test_a_request_id_is_each_users_own(journal):
    """On a --secure controller, bob's retry key equal to alice's named her job and refused his."""
    s = make(journal=journal)
    [alice] = s.submit(spec(user="alice"), now=0, request_id="nightly")
    [bob] = s.submit(spec(user="bob"), now=1, request_id="nightly")
    assert bob.id != alice.id and bob.user == "bob"
    again = s.submit_many([Submission(spec(user="bob"), "nightly")], now=2)[0]
    assert (again.jobs, again.duplicate) == ([bob], True)


def test_one_spec_object_is_resolved_once_and_its_jobs_share_the_result(journal):
    s = make(journal=journal, default_time_limit=120)
    one = parse_spec(spec(time_limit=None))
    first, second = (s.submit(one, now=k)[0] for k in (1, 2))
    assert first.spec is second.spec and first.spec.time_limit == 120 and first.spec.qos == "normal"
    other = s.submit(parse_spec(spec(time_limit=None)), now=3)[0].spec  # another spec object: resolved on its own
    assert other is not first.spec and other == first.spec


def test_a_refused_spec_is_refused_each_time_and_a_new_config_gets_a_new_cache(journal):
    s = make(journal=journal)
    bad = parse_spec(spec(ipus=3))
    for now in (1, 2):
        with pytest.raises(InvalidArgument, match="ipus"):
            s.submit(bad, now=now)
    one = parse_spec(spec(time_limit=None))
    assert s.resolved(one).time_limit == SchedulerConfig().default_time_limit
    s._configure(SchedulerConfig(default_time_limit=600))  # as a restart with retired QOS does (recovery.py)
    assert s.resolved(one).time_limit == 600
