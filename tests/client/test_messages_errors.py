"""vipu.client.messages.to_message names the field a wrong value is for, with the fix, instead of a bare TypeError."""

import pytest

from vipu.client.messages import to_message
from vipu.v1.job_spec_pb2 import JobSpec


@pytest.mark.parametrize("data, want", [
    ({"ipus": 4, "time_limit": "10m"}, "JobSpec.time_limit: '10m' is not a value for this field (typed times are"
                                       " seconds: 600, not '10m'; or send the spec as text)"),
    ({"ipus": 4, "workload": {"kind": "sleep", "duration": "1h"}}, "SleepWorkload.duration: '1h' is not a value"),
    ({"ipus": "four"}, "JobSpec.ipus: 'four' is not a value for this field"),
])
def test_a_value_of_the_wrong_type_names_its_field(data, want):
    with pytest.raises(ValueError, match="^" + want.replace("(", r"\(").replace(")", r"\)")):
        to_message(data, JobSpec())
