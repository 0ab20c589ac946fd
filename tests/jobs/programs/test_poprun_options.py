"""poprun takes PopRun's options as Graphcore's scripts pass them: those that mean something here are checked
against the job and acted on, a disagreeing one refused naming the flag and the fix; the rest are taken with one
line on stderr saying they have no effect here."""

from __future__ import annotations

import json
import os
import shlex
import signal

import pytest

from vipu.jobs.programs import launcher
from vipu.jobs.programs.launcher import LayoutError, instance_environment, layout, main, parse
from vipu.jobs.programs.poprun_options import NO_EFFECT, SWITCHES, notes

JOB = {"IPUOF_VIPU_API_PARTITION_ID": "slurm_7", "VIPU_PARTITION_IPUS": "16", "IPUOF_VIPU_API_HOST": "10.1.2.3",
       "IPUOF_VIPU_API_PORT": "8090", "POPLAR_TARGET_OPTIONS": json.dumps({"ipuLinkDomainSize": "16"})}
# the newcomer's line, as graphcore/examples' run scripts and benchmarks.yml write it
GRAPHCORE = ("-vv --vipu-partition=slurm_7 --vipu-server-host=10.1.2.3 --vipu-server-port 8090 --num-instances=2"
             " --num-replicas=16 --ipus-per-replica=1 --num-ilds 1 --vipu-server-timeout 300 --reset-partition=no"
             " --update-partition=yes --remove-partition=yes --vipu-allocation=alloc-1"
             " --sync-type=ST_POD_NATIVE_DEFAULT --executable-cache-path cache/rn50 --numa-aware=yes"
             " --print-topology=yes"
             " --mpi-global-args='--mca btl_tcp_if_include eno1'"
             " --mpi-local-args='-x OPAL_PREFIX -x IPUOF_VIPU_API_TIMEOUT=3600 -x POPLAR_LOG_LEVEL=WARN'"
             " python3 train.py --config resnet50 --print-topology")


def test_a_graphcore_command_line_is_taken_and_checked_against_the_job():
    args = parse(shlex.split(GRAPHCORE))
    assert args.program == ["python3", "train.py", "--config", "resnet50", "--print-topology"]
    assert (args.verbosity, args.print_topology, args.offline_mode) == (2, True, False)
    assert layout(args, JOB) == ("slurm_7", 16, 2, 16, 1, ())
    assert args.exported == {"IPUOF_VIPU_API_TIMEOUT": "3600", "POPLAR_LOG_LEVEL": "WARN"}
    said = notes(args)
    for flag in ("--vipu-server-timeout=300", "--reset-partition=no", "--update-partition=yes",
                 "--remove-partition=yes", "--vipu-allocation=alloc-1", "--sync-type=ST_POD_NATIVE_DEFAULT",
                 "--executable-cache-path=cache/rn50", "--numa-aware=yes", "--mca btl_tcp_if_include eno1"):
        assert sum(line.startswith(flag) and "has no effect here" in line for line in said) == 1, flag
    assert len(said) == 9  # the honoured ones say nothing


@pytest.mark.parametrize("flag", sorted(NO_EFFECT))
def test_each_option_without_effect_is_said_in_one_line_naming_it(flag):
    value = "yes" if flag in SWITCHES else "5"
    said = notes(parse([f"{flag}={value}", "prog"]))
    assert said == [f"{flag}={value} has no effect here: {NO_EFFECT[flag]}"]


@pytest.mark.parametrize("flags, says", [
    ("--vipu-partition=slurm_8", "--vipu-partition=slurm_8: this job holds partition slurm_7"
                                 " (IPUOF_VIPU_API_PARTITION_ID) and runs on it alone; give --vipu-partition=slurm_7"),
    ("--vipu-server-host=10.9.9.9", "--vipu-server-host=10.9.9.9: this job's V-IPU server is 10.1.2.3"
                                    " (IPUOF_VIPU_API_HOST); give --vipu-server-host=$IPUOF_VIPU_API_HOST"),
    ("--vipu-server-port 9000", "--vipu-server-port=9000: this job's V-IPU server listens on port 8090"),
    ("--num-ilds 2", "--num-ilds 2: partition slurm_7 spans 1 IPU-Link domain(s) of its 16 IPUs; give --num-ilds 1"),
    ("--num-ilds 0", "--num-ilds is 0; give 1 or more"),
    ("--num-instances 4 --host h0,h1,h2", "--num-instances 4 cannot be divided evenly among the 3 hosts of"
                                          " --host=h0,h1,h2: give a multiple of 3 instances"),
    ("-H h[0-1", "--host: 'h[0-1' has an unmatched bracket"),
])
def test_an_option_that_disagrees_with_the_job_is_refused_naming_it_and_the_fix(flags, says):
    with pytest.raises(LayoutError) as refused:
        layout(parse([*shlex.split(flags), "prog"]), JOB)
    assert says in str(refused.value)


def test_the_servers_name_may_be_another_name_of_its_address():
    assert layout(parse(["--vipu-server-host", "localhost", "prog"]), {**JOB, "IPUOF_VIPU_API_HOST": "127.0.0.1"})


def test_ild_count_of_a_partition_spanning_domains():
    env = {**JOB, "VIPU_PARTITION_IPUS": "128", "POPLAR_TARGET_OPTIONS": json.dumps({"ipuLinkDomainSize": "64"})}
    assert layout(parse(["--num-ilds", "2", "prog"]), env).replicas == 128
    with pytest.raises(LayoutError, match="spans 2 IPU-Link domain"):
        layout(parse(["--num-ilds", "1", "prog"]), env)


@pytest.mark.parametrize("options", ['{"ipuLinkDomainSize": null}', '{"ipuLinkDomainSize": Infinity}', "[1]"])
def test_a_domain_size_that_is_no_number_counts_the_partition_as_one_domain(options):
    """Regression: null or Infinity for ipuLinkDomainSize (a script's own POPLAR_TARGET_OPTIONS) ended poprun in a
    traceback (TypeError, OverflowError) instead of the partition's size being taken, as for other malformed ones."""
    assert launcher.partition_ilds({"POPLAR_TARGET_OPTIONS": options}, 16) == 1


@pytest.mark.parametrize("argv, what", [
    (["--print-topology=maybe", "prog"], "--print-topology=maybe: give yes or no"),
    (["--vipu-server-timeout", "soon", "prog"], "--vipu-server-timeout: invalid int value: 'soon'"),
    (["--mpi-local-args", "-x 'A", "prog"], "--mpi-local-args=\"-x 'A\": No closing quotation"),
    (["--ntasks", "4", "prog"], "unrecognized arguments: --ntasks"),  # srun's, not PopRun's
])
def test_a_malformed_or_unknown_option_is_refused_naming_it(argv, what, capsys):
    with pytest.raises(SystemExit) as ended:
        parse(argv)
    assert ended.value.code == 2 and what in capsys.readouterr().err


def test_values_are_read_as_poprun_reads_them():
    """A value starting with a dash is the option's (graphcore/examples' PopDist test passes --mpi-global-args
    --tag-output), and the MPI options add up when repeated (Graphcore's TensorFlow tests); a yes/no option takes a
    yes/no word after it (--numa-aware 1, a Graphcore README's) but never the program; abbreviations are taken."""
    args = parse(["--mpi-global-args", "--tag-output", "--mpi-global-args=--allow-run-as-root", "--num-instance", "2",
                  "--print-topology", "sh", "-c", "--num-instances 3"])
    assert (args.mpi_unused, args.num_instances, args.print_topology, args.program) == (
        ["--tag-output", "--allow-run-as-root"], 2, True, ["sh", "-c", "--num-instances 3"])
    args = parse(["--numa-aware", "1", "--offline-mode", "off", "--process-placement=disabled", "prog"])
    assert (args.numa_aware, args.offline_mode, args.process_placement, args.program) == (True, False, "disabled",
                                                                                          ["prog"])
    assert parse(["--print-topology=no", "--vv", "-H", "h0", "prog"]).print_topology is False
    assert parse(["--vv", "prog"]).verbosity == 2 and parse(["-v", "prog"]).verbosity == 1


def test_hosts_number_their_instances_and_mpi_x_sets_a_variable_in_each():
    args = parse(["--host", "h[0-1]", "--num-instances", "4", "--mpi-local-args=-x IPUOF_VIPU_API_TIMEOUT=3600",
                  "prog"])
    run = layout(args, JOB)
    envs = [instance_environment({**JOB, **args.exported}, i, run.instances, run.replicas, run.per, run.per_host)
            for i in range(4)]
    assert [(e["POPDIST_INSTANCE_INDEX"], e["POPDIST_LOCAL_INSTANCE_INDEX"], e["SLURM_LOCALID"]) for e in envs] == [
        ("0", "0", "0"), ("1", "1", "1"), ("2", "0", "0"), ("3", "1", "1")]
    assert {e["IPUOF_VIPU_API_TIMEOUT"] for e in envs} == {"3600"}
    assert launcher.topology(run).splitlines()[1:] == [
        "  instance 0 on host h0: replicas 0-3 on IPUs 0-3", "  instance 1 on host h0: replicas 4-7 on IPUs 4-7",
        "  instance 2 on host h1: replicas 8-11 on IPUs 8-11", "  instance 3 on host h1: replicas 12-15 on IPUs 12-15"]


def test_offline_mode_runs_without_a_partition():
    args = parse(["--offline-mode=yes", "--num-instances", "2", "--num-replicas", "4", "prog"])
    assert layout(args, {}) == (None, 0, 2, 4, 1, ())
    with pytest.raises(LayoutError, match=r"poprun runs inside a job.*--offline-mode=yes"):
        layout(parse(["--offline-mode=no", "prog"]), {})


def _run(argv, env, monkeypatch, capfd):
    monkeypatch.setattr(os, "environ", {**os.environ, **env})
    before = signal.getsignal(signal.SIGTERM)
    try:
        code = main(argv)
    finally:
        signal.signal(signal.SIGTERM, before)
    out = capfd.readouterr()
    return code, out.out, out.err


def test_verbosity_says_the_layout_on_stderr_and_warnings_name_their_flags(monkeypatch, capfd):
    program = ["sh", "-c", "echo $POPDIST_INSTANCE_INDEX:$POPDIST_LOCAL_INSTANCE_INDEX:$IPUOF_VIPU_API_TIMEOUT"]
    quiet = _run(["--num-instances", "2", *program], JOB, monkeypatch, capfd)
    assert quiet[0] == 0 and sorted(quiet[1].splitlines()) == ["[0] 0:0:", "[1] 1:1:"] and quiet[2] == ""
    code, out, err = _run(["-vv", "--host=h0,h1", "--num-instances", "2", "--reset-partition=no",
                           "--mpi-local-args=-x IPUOF_VIPU_API_TIMEOUT=3600", *program], JOB, monkeypatch, capfd)
    assert code == 0 and sorted(out.splitlines()) == ["[0] 0:0:3600", "[1] 1:0:3600"]
    lines = err.splitlines()
    assert lines[0].startswith("poprun: warning: --reset-partition=no has no effect here")
    assert lines[1].startswith("poprun: warning: --host=h0,h1: every instance runs on this job's node here")
    assert lines[2:5] == ["poprun: partition slurm_7, 2 instance(s), 16 replica(s) of 1 IPU(s)",
                          "poprun:   instance 0 on host h0: replicas 0-7 on IPUs 0-7",
                          "poprun:   instance 1 on host h1: replicas 8-15 on IPUs 8-15"]
    assert "poprun: V-IPU server 10.1.2.3:8090, partition slurm_7 of 16 IPUs in 1 IPU-Link domain(s)" in lines
    assert "poprun: -x IPUOF_VIPU_API_TIMEOUT=3600: set in every instance" in lines
    assert any(line.startswith("poprun: instance 1: POPDIST_NUM_TOTAL_REPLICAS=16") for line in lines)  # -vv only
    assert lines[-1] == "poprun: 2 instance(s) ended; exit code 0"
    one_v = _run(["-v", *program], JOB, monkeypatch, capfd)[2]
    assert "POPDIST_NUM_TOTAL_REPLICAS=16" not in one_v and one_v.endswith("ended; exit code 0\n")


def test_a_disagreeing_partition_stops_poprun_before_anything_runs(monkeypatch, capfd, tmp_path):
    code, out, err = _run(["--vipu-partition=slurm_8", "sh", "-c", f"touch {tmp_path}/ran"], JOB, monkeypatch, capfd)
    assert (code, out) == (2, "") and not (tmp_path / "ran").exists()
    assert err.startswith("poprun: error: --vipu-partition=slurm_8: this job holds partition slurm_7")
