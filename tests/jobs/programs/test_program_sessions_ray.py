"""Users' programs on machine actors (the controller joined to the test session's Ray): a session moves its data
through the actors, refuses what does not fit with the same words as without Ray, gives numpy's results, and the
data-parallel example program equals the built-in training of its spec there too. One test: Ray is slow here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.jobs.programs.builders import ended, output, program, run, show, submit
from tests.sdk.test_examples_e2e import ROOT, batch_script, steps

SRAM = 1472 * 638_976


def test_on_machine_actors_programs_are_refused_compute_and_train_as_without_them(ray_session, server_factory,
                                                                                tmp_path):
    server = server_factory(extra=["--ray", ray_session.get_runtime_context().gcs_address])
    [job] = submit(server, program(tmp_path, "actors", """
        import numpy as np
        import vipu.sdk as ipu

        device = ipu.attach()
        rng = np.random.default_rng(9)
        data = {i: rng.standard_normal(1000).astype(np.float32) for i in device.ipus}
        summed = device.allreduce(data)
        np.savez("results.npz", sum=summed[3], **{f"in{i}": data[i] for i in device.ipus})
        device.put("w", {2: np.zeros(250, np.float32)})
        try:
            device.reserve("activations", {2: device.sram_bytes_per_ipu})
        except ipu.ResourceExhausted as e:
            print(e.message)
        print("node", __import__("os").environ.get("VIPU_RAY_NODE", "?"))
    """))
    detail = ended(server, job, timeout=300)
    assert detail["state"] == "COMPLETED", output(tmp_path, job)
    got = np.load(tmp_path / "results.npz")
    np.testing.assert_allclose(got["sum"], sum(got[f"in{i}"] for i in range(4)), rtol=1e-6, atol=1e-6)
    said = output(tmp_path, job)
    assert f"IPU 2 of partition slurm_{job} (Pod IPU {detail['detail']['first_ipu'] + 2}," in said
    assert f"tensor 'activations' needs {SRAM:,} bytes" in said
    assert f"({SRAM - 1000 - 4000:,} free)" in said  # w, and the allreduce's buffer
    assert "node ?" not in said  # it ran on the Ray node of its machines
    ipus = json.loads(run(server, "vipu", "list", "ipus", "--json").stdout)
    assert all(i["emulated"] for i in ipus[:4])  # the machine actors held its tensors

    [mine] = submit(server, batch_script(tmp_path, "tiny_dp", server))
    ours = steps(server, mine)
    [builtin] = submit(server, str(ROOT / "examples/tiny_dp.yaml"))  # after it: on the same IPUs
    theirs = steps(server, builtin)
    assert show(server, mine)["detail"]["first_ipu"] == show(server, builtin)["detail"]["first_ipu"]
    assert [s["loss"] for s in ours] == [s["loss"] for s in theirs]
    assert [s["emulated_step_s"] for s in ours] == pytest.approx([s["emulated_step_s"] for s in theirs], rel=1e-9)
