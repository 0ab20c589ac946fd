"""The submitting shell's soft resource limits reach a batch script's program, as sbatch's do under Slurm's
default PropagateResourceLimits=ALL, and --propagate chooses them (resource_limits.py)."""

from __future__ import annotations

import resource
import shlex
import subprocess

import pytest

from tests.cli.test_batch_scripts_e2e import ended, submit, vipu, write
from tests.conftest import console_script

SOFT, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)  # the controller's, which the supervisor inherits
NPROC = resource.getrlimit(resource.RLIMIT_NPROC)[0]
NPROC_SHOWN = "unlimited" if NPROC == resource.RLIM_INFINITY else str(NPROC)  # as bash's ulimit -u prints it
# bash's ulimit: sh's (dash) has no -u; no SLURM_RLIMIT_* left: slurmstepd removes them
SHOW = "exec bash -c 'ulimit -n; ulimit -u; env | grep ^SLURM_RLIMIT_; true'"


def submitted_from_shell(server, limits: str, *args: str, cwd) -> int:
    """A job submitted by a shell that set `limits` (ulimit words) first, as a user types it."""
    line = f"{limits}; exec {console_script('vipu')} submit --parsable {shlex.join(args)}"
    out = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=server.env(), cwd=cwd, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.mark.parametrize(("flags", "want"), [
    ([], "77\n4000\n"),  # all of them, the variables gone from the program's environment
    (["--propagate=NOFILE"], f"77\n{NPROC_SHOWN}\n"),
    (["--propagate=NONE"], f"{SOFT}\n{NPROC_SHOWN}\n"),
])
def test_the_shells_soft_limits_reach_the_program_as_propagate_says(server, tmp_path, flags, want):
    job = submitted_from_shell(server, "ulimit -Sn 77; ulimit -Su 4000", "--ipus", "1", *flags, "--wrap", SHOW,
                               cwd=tmp_path)
    assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text() == want


def test_a_value_above_the_hard_limit_is_cut_to_it_or_said_when_named(server, tmp_path):
    """The controller's shell cannot hold a soft limit above its hard one: a value from the environment stands in for
    a submit host whose hard limit is higher (--propagate=NONE keeps it, as sbatch does)."""
    script = write(tmp_path / "n.sh", "#!/bin/sh\n#SBATCH --ipus 1\n#SBATCH --propagate=NONE\nulimit -n\n")
    cut = submit(server, "n.sh", cwd=tmp_path, env={"SLURM_RLIMIT_NOFILE": str(HARD + 1)})[0]
    named = submit(server, str(script), cwd=tmp_path, env={"SLURM_RLIMIT_NOFILE": f"U{HARD + 1}"})[0]
    assert ended(server, cut, tmp_path)["state"] == ended(server, named, tmp_path)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{cut}.out").read_text() == f"{HARD}\n"
    text = (tmp_path / f"slurm-{named}.out").read_text()
    assert text.endswith(f": error: Can't propagate RLIMIT_NOFILE of {HARD + 1} from submit host: Invalid argument"
                         f"\n{SOFT}\n") and text.startswith("slurmstepd-")


def test_an_unknown_or_malformed_limit_is_refused_naming_it(unchanged_server, tmp_path):
    server = unchanged_server
    flag = vipu(server, "submit", "--ipus", "1", "--propagate=nofile", "--wrap", "true", cwd=tmp_path)
    how = ("give ALL, NONE, or a list of CPU, FSIZE, DATA, STACK, CORE, RSS, NPROC, NOFILE, MEMLOCK, AS (e.g."
           " NOFILE,NPROC)")
    assert (flag.returncode, flag.stderr) == (2, "vipu: error: --propagate=nofile: 'nofile' is not a resource limit"
                                                 f" (sbatch: Bad rlimit name); {how}\n")
    write(tmp_path / "p.sh", "#!/bin/sh\n#SBATCH --ipus 1\n#SBATCH --propagate=CPU,FOO\ntrue\n")
    line = vipu(server, "submit", "p.sh", cwd=tmp_path)
    assert (line.returncode, line.stderr) == (2, "vipu: error: p.sh line 3: #SBATCH --propagate=CPU,FOO: 'FOO' is"
                                                 f" not a resource limit (sbatch: Bad rlimit name); {how}\n")
    # (one the submitter sends is its own limit: a variable of its environment goes as it is where --propagate
    # leaves that limit out)
    bad = vipu(server, "submit", "--ipus", "1", "--propagate=NOFILE", "--wrap", "true", cwd=tmp_path,
               env={"SLURM_RLIMIT_CORE": "abc"})
    assert (bad.returncode, bad.stderr) == (2, "vipu: error: invalid --wrap: workload.environment: SLURM_RLIMIT_CORE"
                                               " is 'abc'; the submitting shell's soft limit is a whole number (U"
                                               " before it when --propagate named it), 18446744073709551615 for"
                                               " unlimited: fix or unset it\n")
    spec = vipu(server, "submit", "--ipus", "1", "--duration", "1s", "--propagate=NONE", cwd=tmp_path)
    assert spec.returncode == 2 and "--propagate is for a batch script or --wrap" in spec.stderr


def test_propagate_alone_is_all_and_the_fast_path_leaves_it_to_typer():
    from vipu.cli.fast_path import read
    from vipu.cli.submit_command import command_line

    assert command_line(["--propagate", "job.sh"]) == ["--propagate=ALL", "job.sh"]  # job.sh is no limit
    assert read(["submit", "--propagate", "--wrap", "true"]) is None
    assert read(["submit", "--propagate=NONE", "job.sh"]) == ("submit", {"propagate": "NONE", "specs": ["job.sh"]})


def test_propagate_alone_marks_every_limit_asked_for(server, tmp_path):
    job = submitted_from_shell(server, "ulimit -Sn 77", "--ipus", "1", "--propagate", "--wrap", SHOW, cwd=tmp_path)
    assert ended(server, job, tmp_path)["state"] == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text() == f"77\n{NPROC_SHOWN}\n"
