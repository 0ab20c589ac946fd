"""Job specs: what parses, and every bad input refused with InvalidArgument naming the field — storing nothing."""

import json
import math

import pytest

from vipu.errors import InvalidArgument
from vipu.scheduler.arrays import parse_array
from vipu.scheduler.durations import format_duration, parse_duration
import vipu.jobs.train_spec  # noqa: F401 - registers the train kind, as the controller does
from vipu.scheduler.job_spec import load_spec, parse_spec
from vipu.scheduler.workload import HoldWorkload, SleepWorkload

from tests.scheduler.builders import RecordingJournal, make, spec


@pytest.mark.parametrize(
    "text,seconds",
    [(90, 90), (1.5, 1.5), ("90s", 90), ("10m", 600), ("1h30m", 5400), ("2d", 172800),
     ("1d2h3m4s", 93784), ("1-00:00:00", 86400), ("02:30:00", 9000), ("05:30", 330), ("1-12", 129600),
     ("1-2:30", 95400), (" 1H ", 3600)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "10x", "1h-3", True, None, [1], "400d", "1:2:3:4"])
def test_bad_durations(text):
    with pytest.raises(Exception) as e:
        parse_duration(text)
    assert "use units" in str(e.value) or "year" in str(e.value)


@pytest.mark.parametrize("text", ["90", " 90 ", "1.5"])
def test_text_without_a_unit_is_refused_with_both_spellings(text):
    """A number in a spec is seconds, but typed text such as '90' is what Slurm's -t reads as minutes."""
    with pytest.raises(Exception) as e:
        parse_duration(text)
    bare = text.strip()
    assert f"write {bare}s for seconds or {bare}m for minutes" in str(e.value)
    with pytest.raises(InvalidArgument, match="time_limit: '90' has no unit"):
        parse_spec({"ipus": 1, "time_limit": "90"})


def test_unlimited_is_the_longest_limit_only_where_asked_for():
    assert parse_duration("UNLIMITED", unlimited=True) == math.inf
    assert parse_spec({"ipus": 1, "time_limit": "infinite"}).time_limit == math.inf
    with pytest.raises(Exception, match="not a duration"):
        parse_duration("unlimited")  # a sleep's duration or a config's interval has no such thing


@pytest.mark.parametrize("value", ["-5", -5, "-10m", " -1h", "-00:01:00", float("-inf")])
def test_a_negative_duration_is_said_to_be_negative_whatever_its_spelling(value):
    """Regression: '-1' and '-10m' were 'not a duration', which sends the user looking for the wrong mistake."""
    with pytest.raises(Exception) as e:
        parse_duration(value)
    assert "is negative" in str(e.value) and "give 0 or more" in str(e.value)
    with pytest.raises(InvalidArgument) as e:  # a time limit must be more than 0, and says so (not "0 or more")
        parse_spec({"ipus": 1, "time_limit": value})
    assert "time_limit: " in e.value.message and "give more than 0" in e.value.message


def test_format_duration():
    assert format_duration(93784) == "1-02:03:04" and format_duration(59) == "00:00:59"


@pytest.mark.parametrize(
    "text,indices,limit",
    [("0-3", (0, 1, 2, 3), None), ("1,3,5", (1, 3, 5), None), ("0-15:4", (0, 4, 8, 12), None),
     ("0-99%10", tuple(range(100)), 10), ("1-3,2-4%2", (1, 2, 3, 4), 2), ("7", (7,), None)],
)
def test_arrays(text, indices, limit):
    parsed = parse_array(text)
    assert parsed.indices == indices and parsed.limit == limit


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("colour", "red", "colour: unknown field"),
        ("ipus", "four", "ipus"),
        ("ipus", True, "ipus"),
        ("time_limit", 0, "time_limit"),
        ("time_limit", -5, "time_limit"),
        ("time_limit", "soon", "time_limit"),
        ("array", "5-2", "runs backwards"),
        ("array", "0-1000000000", "array"),
        ("array", "0-20000", "at most 10000"),
        ("array", "", "empty"),
        ("array", "0-9%0", "%N"),
        ("dependency", "afterok", "job ids"),
        ("dependency", "afterwards:3", "unknown dependency type"),
        ("dependency", "afterok:1,afterok:2?afterok:3", "mixes"),
        ("nice", 10**9, "nice"),
        ("workload", {"kind": "train"}, "workload"),
        ("workload", {"kind": "sleep"}, "workload.duration: required"),  # its path in the spec: no union tag
        ("output", "a\x00b", "NUL"),
        ("comment", "a\x00b", "comment: contains a NUL byte"),
        ("comment", "x" * 1025, "comment: 1,025 characters long; give at most 1,024"),  # slurmctld's limit
        ("submit_line", "vipu\x00", "submit_line: contains a NUL byte"),
    ],
)
def test_bad_spec_fields(field, value, needle):
    with pytest.raises(InvalidArgument) as e:
        parse_spec(spec(**{field: value}))
    assert needle in e.value.message and e.value.message.startswith("invalid job spec")


def test_workload_kinds_and_defaults():
    s = parse_spec({"ipus": 2})
    assert isinstance(s.workload, HoldWorkload) and s.time_limit is None and s.qos is None and s.requeue
    s = parse_spec(spec(workload={"kind": "sleep", "duration": "2m"}))
    assert s.workload == SleepWorkload(duration=120)


def test_load_spec_yaml_and_json():
    text = "name: train\nipus: 4\ntime_limit: 1h30m\narray: 0-9%2\ndependency: afterok:1:2,afterany:3\n"
    s = load_spec(text, "job.yaml")
    assert (s.name, s.ipus, s.time_limit, s.array, s.dependency) == ("train", 4, 5400, "0-9%2", "afterok:1:2,afterany:3")
    assert load_spec(json.dumps({"ipus": 2}).encode(), "job.json").ipus == 2


@pytest.mark.parametrize(
    "data,needle",
    [
        (b"x" * (10 << 20), "at most 1048576 bytes"),
        (b"\xff\xfe\x00\x01garbage", "not UTF-8"),
        ("ipus: 1\x00\x00", "NUL"),
        ("- 1\n- 2\n", "expected a mapping"),
        ("just a string", "expected a mapping"),
        ("ipus: [1\n", "not valid YAML/JSON (line 2, column 1: expected ',' or ']', but got '<stream end>' (while"
                        " parsing a flow sequence from line 1, column 7))"),
        ('{"ipus": 1,,}', "not valid YAML/JSON (line 1, column 12: expected the node content"),
        ("ipus: 4\n  name: x\n", "not valid YAML/JSON (line 2, column 7: mapping values are not allowed here)"),
        ("ipus: 1\ncolor: blue\n", "color: unknown field"),
        ("ipus: 4\npod: bow-pod64\n", "pod: for `vipu plan` only (a job runs on its controller's Pod); remove it"),
        ("", "it is empty; give at least ipus, e.g. {ipus: 4, time_limit: 10m}"),
        ("ipus: 4.0", "ipus: Input should be a valid integer, not 4.0; write a whole number (4)"),
        ('{"ipus": 4, "hold": "yes"}', "hold: Input should be a valid boolean, not 'yes'; use true or false"),
        ('ipus: 4\nrequeue: 0', "requeue: Input should be a valid boolean, not 0; use true or false"),
        ("ipus: 4\nnice: 100000000000", "nice: 100000000000 is too large; give at most 10000"),
        # the list goes on with any kind a test registered (command)
        ("ipus: 4\nworkload: {kind: slep}", "workload.kind: 'slep' is not one of the kinds; use one of sleep, hold, "),
        ("name: a\nipus: 4\nname: b\n", "field 'name' is given twice (line 3); keep one"),
        ('{"name": "a", "name": "b"}', "field 'name' is given twice; keep one"),
        ('{"ipus": "16"}', "ipus: Input should be a valid integer, not '16'; write the number without quotes"),
        ('{"ipus": 1e308}', "ipus: Input should be a valid integer, not 1e+308; write a whole number"),
        ("ipus: 1\nbegin: [1, 2]", "begin: [1, 2] (a list) is not a time; give a time as sbatch --begin takes it"),
        (f"ipus: 1\noutput: /tmp/{'a' * 5000}", "output: 5,005 characters long; give at most 4,096"),
    ],
)
def test_load_spec_refuses(data, needle):
    with pytest.raises(InvalidArgument) as e:
        load_spec(data, "job.yaml")
    assert needle in e.value.message and "job.yaml" in e.value.message


# -- at submit: checked against the Pod, the QOS table and the jobs; nothing is stored ---------------------------
@pytest.mark.parametrize(
    "fields,needle",
    [
        ({"ipus": 3}, "not a power of two"),
        ({"ipus": 32}, "bow-pod16 has 16 IPUs"),
        ({"ipus": 0}, "ipus is 0"),
        ({"qos": "platinum"}, "qos 'platinum' is unknown; use one of high, low, normal"),
        ({"dependency": "afterok:99"}, "job 99, which does not exist"),
        ({"dependency": "afterok:1"}, "cyclic"),
        ({"array": "0-3", "dependency": "afterany:2"}, "cyclic"),
        ({"name": "bad\nname"}, "job name 'bad\\nname' contains the control character '\\n'"),
        ({"user": ""}, "user name is empty"),
        ({"allocation": "a/b"}, "allocation name"),
        ({"array": "0-600"}, "at most 500"),
    ],
)
def test_submit_refuses_and_stores_nothing(fields, needle):
    journal = RecordingJournal()
    s = make(journal=journal, max_array_tasks=500)
    with pytest.raises(InvalidArgument) as e:
        s.submit(spec(**fields), now=0)
    assert needle in e.value.message
    assert journal.commits == [] and s.table.jobs == {} and s.table.next_id == 1


def test_submit_refuses_qos_limits_that_can_never_be_met():
    s = make(qos={"normal": {"priority": 1, "max_ipus_per_user": 4, "max_time_limit": "1h"}})
    with pytest.raises(InvalidArgument, match="could never start"):
        s.submit(spec(ipus=8), 0)
    with pytest.raises(InvalidArgument, match="allows at most 01:00:00"):
        s.submit(spec(time_limit="2h"), 0)


def test_submit_resolves_defaults():
    s = make(default_time_limit="30m")
    job = s.submit({"ipus": 2}, now=5)[0]
    assert (job.spec.qos, job.spec.time_limit, job.partition, job.state.value) == ("normal", 1800, "slurm_1", "PENDING")


def test_a_flow_mapping_spec_is_yaml_not_broken_json():
    """Regression: text starting with '{' was parsed only as JSON, so {ipus: 4, time_limit: 10m} was refused."""
    assert load_spec("{ipus: 4, time_limit: 10m}").time_limit == 600


def test_a_relative_output_is_refused_at_submit_but_a_stored_one_still_loads():
    """The controller has no working directory of the user's; a record stored before the rule came must still load
    (a model validator refused it when the state folder was read back)."""
    s = make()
    with pytest.raises(InvalidArgument, match="output 'out-%j.txt' is relative"):
        s.submit(spec(output="out-%j.txt"), 0)
    assert s.table.jobs == {}
    assert parse_spec(spec(output="out-%j.txt")).output == "out-%j.txt"
