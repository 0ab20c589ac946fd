"""connection.flagged: a refusal the controller words by the API's fields, said by the flags the CLI's user typed,
each field the refusal holds at fault where its message names it, not only the one it starts with."""

import pytest

from vipu.client.api_error import ApiError
from vipu.cli.connection import flagged

FLAGS = {"exclude": "-x/--exclude", "nodelist": "-w/--nodelist", "qos": "-q/--qos", "array": "-a/--array"}


def refusal(message: str, *fields: str) -> ApiError:
    return ApiError("INVALID_ARGUMENT", "INVALID_FIELD", message, tuple((f"spec.{f}", message) for f in fields))


@pytest.mark.parametrize(("message", "fields", "flags", "want"), [
    ("qos is empty; give one", ("qos",), FLAGS, "-q/--qos is empty; give one"),
    ("invalid flags: array: 'x': not a range", ("array",), FLAGS, "-a/--array: 'x': not a range"),
    # both fields at fault: each said by its flag
    ("exclude and nodelist both name ag01; a job cannot both hold and avoid a machine: leave it out of one",
     ("exclude", "nodelist"), FLAGS,
     "-x/--exclude and -w/--nodelist both name ag01; a job cannot both hold and avoid a machine: leave it out of one"),
    ("exclude takes ag02 from ag[02-03], the only block of 8 IPUs that holds ag03 (nodelist): exclude only nodes"
     " outside ag[02-03], or ask for fewer IPUs", ("exclude", "nodelist"), FLAGS,
     "-x/--exclude takes ag02 from ag[02-03], the only block of 8 IPUs that holds ag03 (-w/--nodelist): exclude only"
     " nodes outside ag[02-03], or ask for fewer IPUs"),  # "exclude only": a verb of the fix, after the lead
    # the other field from a script's line: named by that line, as a lead is
    ("exclude and nodelist both name ag01; leave it out of one", ("exclude", "nodelist"),
     {"exclude": "-x/--exclude", "nodelist": "job.sh line 2: #SBATCH -w ag01: nodelist"},
     "-x/--exclude and job.sh line 2: #SBATCH -w ag01 both name ag01; leave it out of one"),
    # the other field from a spec file (no flag gave it): its field name stays
    ("exclude and nodelist both name ag01; leave it out of one", ("exclude", "nodelist"), {"exclude": "-x/--exclude"},
     "-x/--exclude and nodelist both name ag01; leave it out of one"),
    # a quoted value that reads as a field stays as written
    ("exclude 'nodelist' names nodelist", ("exclude", "nodelist"), FLAGS,
     "-x/--exclude 'nodelist' names -w/--nodelist"),
])
def test_a_refusal_names_each_field_by_its_flag(message, fields, flags, want):
    assert flagged(refusal(message, *fields), flags).message == want
