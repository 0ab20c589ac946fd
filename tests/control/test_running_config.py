"""What a running controller says of its configuration (scontrol show config): the scheduler config field by field,
the runs' settings and what vipu-server was started with; and a --policy-file's failure line timed on the wall
clock in ISO, as the log's own times are (a replay's stays in virtual seconds: test_policy_file.py)."""

from __future__ import annotations

import re

from vipu.access import ANYONE
from vipu.control.job_ops import SubmitRequest
from vipu.control.running_config import running_config
from vipu.control.startup import open_plane
from vipu.scheduler.config import load_scheduler_config
from vipu.server.arguments import parse_args, served
from vipu.server.calls_in_flight import default_threads

RAISES = ('ORDER = "submit"\n\n\ndef schedule(request):\n    if any(True for _ in request.pending):\n'
          '        raise RuntimeError("not today")\n    from vipu.scheduler.policies import engine\n'
          '    return engine.run(request, iter(()), "strict")\n')


def test_the_running_config_names_the_policy_its_file_the_limits_and_the_flags(tmp_path):
    policy = tmp_path / "mine.py"
    policy.write_text(RAISES)
    yaml = tmp_path / "scheduler.yaml"
    yaml.write_text("policy: fifo\nfirst_job_id: 5001\nweights: {qos: 10}\nmax_submit_jobs_per_account: 30\n")
    config = load_scheduler_config(str(yaml), None, str(policy))
    plane = open_plane("bow-pod16", tmp_path / "state", "127.0.0.1", 8090, config, kill_wait_s=5)
    try:
        plane.served = {"SchedulerConfigFile": str(yaml), "RpcThreads": 3, "RayWait": None}
        plane.devices.budget_tensors(1 << 30)  # vipu-server --tensor-memory 1G
        entries = running_config(plane)
        assert [k for k, _ in entries] == sorted(k for k, _ in entries)  # sorted by key, as scontrol's
        shown = dict(entries)
        assert {k: shown[k] for k in ("SchedulerType", "SchedulerPolicyFile", "SchedulerConfigFile", "FirstJobId",
                                      "PriorityWeightQos", "PriorityWeightAge", "MaxSubmitJobsPerAccount",
                                      "MaxSubmitJobsPerUser", "MinJobAge", "KillWait", "RpcThreads", "RayWait",
                                      "Pod", "PodIpus", "StateSaveLocation", "AccessKeys", "DefaultQos",
                                      "TensorMemory")} == {
            "SchedulerType": "fifo", "SchedulerPolicyFile": str(policy), "SchedulerConfigFile": str(yaml),
            "FirstJobId": "5001", "PriorityWeightQos": "10", "PriorityWeightAge": "1000",
            "MaxSubmitJobsPerAccount": "30", "MaxSubmitJobsPerUser": "50000", "MinJobAge": "300 sec",
            "KillWait": "5 sec", "RpcThreads": "3", "RayWait": "(null)", "Pod": "bow-pod16", "PodIpus": "16",
            "StateSaveLocation": str(tmp_path / "state"), "AccessKeys": "not checked: every caller is trusted",
            "DefaultQos": "normal", "TensorMemory": "1073741824 bytes"}
        assert shown["Qos"].startswith('{"high":{"preempt":["low"],"preempt_mode":"requeue","priority":100},')

        plane.jobs.submit([SubmitRequest({"ipus": 1, "time_limit": "1m", "workload": {"kind": "sleep",
                                                                                       "duration": 1}}, {})], ANYONE)
        plane.step()  # the file raises: fifo decides the cycle, and the failure is timed as the log's lines are
        failure = plane.scheduler.policy.first_failure
        assert re.search(r"RuntimeError: not today \(at time \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)$", failure)
    finally:
        plane.stop()
        plane.store.close()


def test_the_device_threads_shown_are_those_the_server_runs_not_the_flags_default():
    """Without --device-threads the flag is None, but the DeviceService runs default_threads(Pod IPUs): show config
    once said (null) for it."""
    args = parse_args(["--pod", "bow-pod16"])
    assert served(args, 8090, "off", default_threads(16))["DeviceThreads"] == default_threads(16) == 80
    assert served(parse_args(["--device-threads", "7"]), 8090, "off", 7)["DeviceThreads"] == 7
    assert served(parse_args(["--device-port", "-1"]), 8090, "off", None)["DeviceThreads"] == "off (--device-port -1)"


def test_the_machine_bundle_and_the_ray_it_is_reserved_on_are_shown():
    """Regression: `vipu show config` had no MachineBundle line, so a typo in it (ipu_hots=1) showed nowhere."""
    shown = served(parse_args(["--ray", "10.0.0.5:6379", "--ray-wait", "120", "--machine-bundle", "ipu_host=1"]),
                   8090, "off", None)
    assert (shown["Ray"], shown["RayWait"], shown["MachineBundle"]) == ("10.0.0.5:6379", "120 sec", "ipu_host=1")
    assert served(parse_args([]), 8090, "off", None)["MachineBundle"] == "CPU=0.01"  # --ray local's default
    assert served(parse_args(["--ray", "off"]), 8090, "off", None)["MachineBundle"] is None
