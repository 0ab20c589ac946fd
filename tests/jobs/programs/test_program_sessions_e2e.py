"""Users' programs on their partition's IPUs through vipu.sdk, end to end against a real controller (--ray off):
capacity refused naming the IPU and the bytes, collectives equal to numpy on the data, virtual time charged, steps
shown by `vipu logs`, `vipu show job` and the metrics, instances meeting for collectives, and a run's token that
opens only its own session and dies with it, its tensors freed."""

from __future__ import annotations

import json
import urllib.request

import grpc
import numpy as np
import pytest

from tests.jobs.programs.builders import ended, output, program, run, show, submit, wait_for
from vipu.v1 import device_pb2 as d
from vipu.v1 import device_pb2_grpc

SRAM = 1472 * 638_976  # a Bow IPU: 1,472 tiles of 624 KiB


@pytest.fixture
def controller(server_factory):
    return server_factory(extra=["--kill-wait", "1"])


def test_more_sram_than_an_ipu_has_is_refused_naming_the_ipu_the_bytes_asked_and_free(controller, tmp_path):
    [job] = submit(controller, program(tmp_path, "greedy", """
        import sys
        import numpy as np
        import vipu.sdk as ipu

        device = ipu.attach()
        device.put("w", {1: np.zeros(1000, np.float32)})
        try:
            device.reserve("activations", {1: device.sram_bytes_per_ipu})
        except ipu.ResourceExhausted as e:
            print(e.message)
            sys.exit(3)
    """))
    detail = ended(controller, job)
    assert (detail["state"], detail["exit_code"]) == ("FAILED", 3)
    said = output(tmp_path, job)
    assert f"IPU 1 of partition slurm_{job} (Pod IPU {detail['detail']['first_ipu'] + 1}," in said
    assert f"tensor 'activations' needs {SRAM:,} bytes" in said and f"({SRAM - 4000:,} free)" in said


def test_collectives_move_the_data_numpy_would_give_charge_time_and_the_steps_are_shown(controller, tmp_path):
    [job] = submit(controller, program(tmp_path, "reduce", """
        import pathlib, time
        import numpy as np
        import vipu.sdk as ipu

        device = ipu.attach(ipus_per_replica=2)
        rng = np.random.default_rng(5)
        data = {i: rng.standard_normal((4, 6)).astype(np.float32) for i in device.ipus}
        summed = device.allreduce(data, device.across_replicas(), name="grads")
        shards = device.reduce_scatter(data)
        gathered = device.all_gather(data, axis=1)
        told = device.broadcast({0: data[0], 1: None, 2: None, 3: None}, root=0)
        seconds = device.compute({i: 1e9 for i in device.ipus}, "fp16")
        first = device.report_step(np.array([1.0, 2.0], np.float32))
        device.compute({0: 1e9}, "fp16")
        device.report_step(np.float32(0.5))
        np.savez("results.npz", **{f"in{i}": data[i] for i in device.ipus},
                 **{f"sum{i}": summed[i] for i in device.ipus}, **{f"shard{i}": shards[i] for i in device.ipus},
                 **{f"gather{i}": gathered[i] for i in device.ipus}, **{f"told{i}": told[i] for i in device.ipus})
        pathlib.Path("first.json").write_text(__import__("json").dumps({**first, "compute": seconds}))
        while not pathlib.Path("go").exists():  # running, so its steps are live in the metrics
            time.sleep(0.05)
    """))
    first = json.loads(wait_for(lambda: (tmp_path / "first.json").is_file() and (tmp_path / "first.json").read_text()))
    got = np.load(tmp_path / "results.npz")
    data = [got[f"in{i}"] for i in range(4)]
    for i in range(4):
        np.testing.assert_allclose(got[f"sum{i}"], data[i % 2] + data[i % 2 + 2], rtol=1e-6)
        np.testing.assert_allclose(got[f"shard{i}"], sum(data).reshape(-1)[i * 6:(i + 1) * 6], rtol=1e-6)
        assert np.array_equal(got[f"gather{i}"], np.concatenate(data, axis=1))
        assert np.array_equal(got[f"told{i}"], data[0])
    assert first["loss"] == 1.5 and first["collectives"] == 4 and first["compute_s"] == first["compute"] > 0
    assert first["data_parallel_s"] > 0 and first["tensor_parallel_s"] == 0  # every collective crossed replicas
    assert first["emulated_step_s"] == pytest.approx(first["compute_s"] + first["sync_s"] + first["data_parallel_s"])
    metrics = urllib.request.urlopen(controller.metrics_url, timeout=10).read().decode()
    assert f'vipu_job_step_seconds{{job_id="{job}",modelled="false"}} {first["compute"]}' in metrics  # its last step: one compute set
    assert f'vipu_job_loss{{job_id="{job}"}} 0.5' in metrics
    busy = [line for line in metrics.splitlines()
            if line.startswith("vipu_ipu_memory_used_bytes") and " 0.0" not in line]
    assert busy  # its IPUs' SRAM, from its step reports
    first_ipu = show(controller, job)["detail"]["first_ipu"]
    ipus = {i["id"]: i for i in json.loads(run(controller, "vipu", "list", "ipus", "--json").stdout)}
    assert ipus[first_ipu]["utilization"] > 0.9 and ipus[first_ipu + 1]["utilization"] == 0  # IPU 0 computed
    assert ipus[first_ipu]["sram_used_bytes"] > 0
    top = run(controller, "vipu", "top", "--once")
    assert top.returncode == 0 and f"slurm_{job}" in top.stdout
    (tmp_path / "go").touch()
    detail = ended(controller, job)
    assert detail["state"] == "COMPLETED"
    assert detail["training"]["losses"] == [1.5, 0.5] and detail["training"]["steps_reported"] == 2
    assert detail["training"]["emulated_step_s"] == pytest.approx(  # read from its Duration: to the nanosecond
        (first["emulated_step_s"] + first["compute"]) / 2, abs=1e-9)
    assert [u["ipu"] - detail["detail"]["first_ipu"] for u in detail["ipu_usage"]] == [0, 1, 2, 3]
    logs = run(controller, "vipu", "logs", str(job)).stdout
    assert "steps reported through vipu.sdk: 2" in logs and "data-parallel allreduce" in logs
    as_data = json.loads(run(controller, "vipu", "logs", str(job), "--json").stdout)
    assert [s["loss"] for s in as_data["steps"]] == [1.5, 0.5]
    assert as_data["steps"][0]["emulated_step_s"] == first["emulated_step_s"]
    assert "EmulatedStepTime=" in run(controller, "vipu", "show", "job", str(job)).stdout


def test_instances_of_one_program_meet_for_collectives_and_steps(controller, tmp_path):
    launch = "".join(  # what a launcher does: each instance with its POPDIST_* variables (the second first)
        f"POPDIST_NUM_TOTAL_REPLICAS=4 POPDIST_NUM_IPUS_PER_REPLICA=1 POPDIST_NUM_LOCAL_REPLICAS=2"
        f" POPDIST_REPLICA_INDEX_OFFSET={offset} \"$PYTHON\" both.py > instance{offset // 2}.txt &\n"
        for offset in (2, 0))
    [job] = submit(controller, program(tmp_path, "both", """
        import numpy as np
        import vipu.sdk as ipu

        device = ipu.attach()
        mine = {i: np.full(3, i + 1.0, np.float32) for i in device.local_ipus}
        got = device.allreduce(mine, device.across_replicas())
        report = device.report_step(np.array([ipu.getInstanceIndex()] * 2, np.float32))
        print(ipu.getInstanceIndex(), ipu.getNumInstances(), sorted(got), got[device.local_ipus[0]].tolist(),
              report["loss"])
    """, script=launch + "wait\n"))
    assert ended(controller, job)["state"] == "COMPLETED", output(tmp_path, job)
    said = [(tmp_path / f"instance{i}.txt").read_text().split(maxsplit=4) for i in (0, 1)]
    assert said == [["0", "2", "[0,", "1]", "[10.0, 10.0, 10.0] 0.5\n"],
                    ["1", "2", "[2,", "3]", "[10.0, 10.0, 10.0] 0.5\n"]]
    assert show(controller, job)["training"]["losses"] == [0.5]


def test_a_runs_token_opens_only_its_session_and_dies_with_the_run_which_frees_its_tensors(server_factory, tmp_path):
    # KillWait long: the program ends by itself once its waiting call has failed. With 1 s, a program descheduled
    # for a second on a loaded machine was killed before it said how the call ended (a flake)
    controller = server_factory(extra=["--kill-wait", "60"])
    [hog] = submit(controller, program(tmp_path, "hog", """
        import os, pathlib, signal
        import numpy as np
        import vipu.sdk as ipu

        signal.signal(signal.SIGTERM, lambda *_: None)  # to say how the waiting call ended
        device = ipu.attach()
        device.reserve("most", {0: device.sram_bytes_per_ipu * 7 // 10})
        pathlib.Path("token").write_text(os.environ["VIPU_RUN_TOKEN"])
        try:  # IPUs 2 and 3 never come: it waits until the run ends
            device.allreduce({0: np.ones(2), 1: np.ones(2)}, [0, 1, 2, 3])
        except ipu.FailedPrecondition as e:
            print("ended:", e.message, flush=True)
    """))
    token = wait_for(lambda: (tmp_path / "token").is_file() and (tmp_path / "token").read_text(), timeout=120)
    channel = grpc.insecure_channel(controller.device_address)
    stub = device_pb2_grpc.DeviceServiceStub(channel)

    def attach(with_token: str):
        return stub.Attach(d.AttachRequest(num_instances=1, ipus_per_replica=1),
                           metadata=(("x-vipu-run-token", with_token),), timeout=10)

    assert attach(token).partition == f"slurm_{hog}"
    with pytest.raises(grpc.RpcError) as wrong:
        attach("someone-elses")
    assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as outside:
        stub.GetTensors(d.TensorsRequest(name="most", ipus=[4]), metadata=(("x-vipu-run-token", token),), timeout=10)
    assert "IPU 4 is not one of partition" in outside.value.details()
    assert run(controller, "vipu", "cancel", str(hog)).returncode == 0
    assert ended(controller, hog)["state"] == "CANCELLED"
    wait_for(lambda: "ended:" in output(tmp_path, hog), timeout=60)
    assert f"job {hog}'s run was stopped (CANCELLED)" in output(tmp_path, hog)
    # its partition is kept until its program has ended (after CANCELLED): a job submitted before went elsewhere
    wait_for(lambda: not json.loads(run(controller, "vipu", "list", "partitions", "--json").stdout), timeout=60)
    with pytest.raises(grpc.RpcError) as gone:
        attach(token)
    assert gone.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    # the next job on those IPUs gets all of their SRAM: the cancelled run's tensors were freed
    [next_job] = submit(controller, program(tmp_path, "after", """
        import vipu.sdk as ipu
        ipu.attach().reserve("most", {0: 1472 * 638_976 * 7 // 10})
    """))
    detail = ended(controller, next_job)
    assert detail["state"] == "COMPLETED", output(tmp_path, next_job)
    assert detail["detail"]["first_ipu"] == show(controller, hog)["detail"]["first_ipu"]


def test_with_the_device_port_off_a_program_is_told_it_has_no_ipus(server_factory, tmp_path):
    controller = server_factory(extra=["--device-port", "-1"])
    assert controller.device_address == ""
    [job] = submit(controller, program(tmp_path, "blind", """
        import vipu.sdk as ipu
        try:
            ipu.attach()
        except ipu.FailedPrecondition as e:
            print(e.message)
    """))
    assert ended(controller, job)["state"] == "COMPLETED"
    said = output(tmp_path, job)
    assert "VIPU_DEVICE_ADDRESS is not set" in said and "--device-port is not -1" in said


def test_streaming_puts_past_the_controllers_tensor_memory_are_refused_and_its_end_gives_them_back(server_factory,
                                                                                                  tmp_path):
    """Regression (security walk): a 1-IPU job's 8 MiB puts to Streaming Memory grew the controller from 277 MB to
    1.39 GB in 40 s, bounded only by the emulated 256 GB; --tensor-memory refuses them once programs hold it."""
    controller = server_factory(extra=["--kill-wait", "1", "--tensor-memory", "40M"])
    greedy = """
        import numpy as np
        import vipu.sdk as ipu

        device = ipu.attach()
        puts = 0
        try:
            while True:
                device.put(f"t{puts}", {0: np.zeros(1 << 21, np.float32)}, memory="streaming")
                puts += 1
        except ipu.ResourceExhausted as e:
            print(puts, e.message)
    """
    for name in ("first", "second"):  # the second gets the first's bytes back
        [job] = submit(controller, program(tmp_path, name, greedy, ipus=1))
        detail = ended(controller, job)
        assert (detail["state"], detail["exit_code"]) == ("COMPLETED", 0)
        puts, said = output(tmp_path, job).split(" ", 1)
        assert puts == "5" and said.startswith(
            "put 't5': 8,388,608 bytes (8.0 MiB) more would pass the controller's host memory for tensors: programs"
            " hold 41,943,040 of its 41,943,040 bytes (40.0 MiB), this run 41,943,040"), said
