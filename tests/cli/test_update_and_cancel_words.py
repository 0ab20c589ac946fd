"""What `vipu update job` and `vipu cancel` read from their words, before anything is sent: Slurm's field names in
any case, times as scontrol reads them, signals by name or number."""

from __future__ import annotations

import pytest

from vipu.cli.cancel_command import described, signal_number
from vipu.cli.update_command import field_values, target
from vipu.client.messages import duration


@pytest.mark.parametrize("pairs, fields", [
    (["TimeLimit=90"], {"time_limit": duration(5400)}),  # a bare number is minutes, as scontrol's
    (["timelimit=1:30:00"], {"time_limit": duration(5400)}),
    (["TIMELIMIT=+30"], {"time_limit_add": duration(1800)}),
    (["TimeLimit=-0:30"], {"time_limit_add": duration(-30)}),
    (["QOS=high", "nice=5", "JobName=x"], {"qos": "high", "nice": 5, "name": "x"}),
    (["Name=x", "Dependency="], {"name": "x", "dependency": ""}),
    (["ArrayTaskThrottle=4", "Priority=0"], {"array_task_throttle": 4, "priority": 0}),
    (["StartTime=now+1hour"], {"begin": "now+1hour"}),
    (["TimeLimit=0"], {"time_limit_unlimited": True}),  # UNLIMITED, as sbatch -t 0
    (["timelimit=Unlimited"], {"time_limit_unlimited": True}),
    (["BeginTime=2026-11-22T16:00"], {"begin": "2026-11-22T16:00"}),
    (["ReqNodeList=ag[00-01]", "ExcNodeList="], {"nodelist": "ag[00-01]", "exclude": ""}),  # "": removes it
    (["nodelist=ag02"], {"nodelist": "ag02"}),  # scontrol's other name for it
])
def test_fields_in_any_case(pairs, fields):
    assert field_values(pairs) == fields


@pytest.mark.parametrize("pairs, words", [
    (["Colour=red"], "'Colour' is not a field"),
    (["TimeLimit"], "is not Field=value"),
    (["=5"], "is not Field=value"),
    (["TimeLimit=+0"], "means no limit, which this field does not take"),
    (["TimeLimit=soon"], "is not a Slurm time"),
    (["Nice=1.5"], "is not a whole number"),
    # past what the request carries: a traceback of protobuf's ValueError before (walk28)
    # walk29: the controller's bound, not the wire's
    (["Nice=99999999999999999999"], "Nice= 99999999999999999999 is out of range; give -10000 to 10000 (negative:"
                                    " admins only)"),
    (["Priority=-99999999999999999999"], "Priority= -99999999999999999999 is out of range; give 1 to 4294967294,"
                                         " or 0 to hold the job"),
    (["ArrayTaskThrottle=99999999999"], "ArrayTaskThrottle= 99999999999 is out of range; give the tasks to run at"
                                        " once (at most the array's), or 0 for no limit"),
    (["TimeLimit=5", "TimeLimit=+5"], "TimeLimit is given twice"),
])
def test_bad_fields_name_the_field(pairs, words, capsys):
    with pytest.raises(SystemExit) as out:
        field_values(pairs)
    assert out.value.code == 2 and words in capsys.readouterr().err


def test_the_job_comes_first_as_job_id_or_jobid():
    assert target(["job", "26_3", "QOS=high"]) == ("26_3", ["QOS=high"])
    assert target(["JobId=26", "QOS=high"]) == ("26", ["QOS=high"])
    assert target(["jobid=26"]) == ("26", [])


@pytest.mark.parametrize("text, number", [("USR1", 10), ("sigusr2", 12), ("TERM", 15), ("9", 9), ("64", 64)])
def test_signals_by_name_or_number(text, number):
    assert signal_number(text) == number


@pytest.mark.parametrize("text", ["0", "65", "USR3", "", "-1"])
def test_bad_signals(text, capsys):
    with pytest.raises(SystemExit) as out:
        signal_number(text)
    assert out.value.code == 2 and "-s/--signal" in capsys.readouterr().err


def test_filters_are_named_as_they_were_given():
    assert described({"users": ["bob"], "states": ["PD", "R"], "names": []}, me=True) == "-u bob -t PD,R --me"
