"""What the controller's own Python helpers import: never a module from the folder the controller was started in,
which may be one its users write in (walk44: a json.py in a shared folder ran as root in every program's supervisor,
before the job's user was taken on)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

# a module of the standard library's name that notes who imported it, then hands over the real one
SHIM = """import os, sys
open(os.path.join({folder!r}, "imported-" + __name__), "w").write(str(os.getuid()))
del sys.modules[__name__]
sys.path = [p for p in sys.path if p not in ("", {folder!r})]
real = __import__(__name__)
sys.modules[__name__] = real
globals().update(real.__dict__)
"""


def planted(folder, *names) -> None:
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / f"{name}.py").write_text(SHIM.format(folder=str(folder)))


def test_a_programs_supervisor_imports_nothing_from_the_controllers_working_directory(tmp_path, monkeypatch):
    from vipu.jobs.programs.hosts import Steps

    shared = tmp_path / "shared"
    planted(shared, "json", "select", "socket")
    monkeypatch.chdir(shared)
    launch = {"job_id": 1, "run": 1, "script": "#!/bin/bash\necho hi\n", "args": [], "cwd": str(tmp_path),
              "env": {"PATH": os.environ["PATH"]}, "stdout": str(tmp_path / "out"), "stderr": None, "user": None,
              "kill_wait_s": 2, "spool": str(tmp_path / "spool")}
    steps = Steps()
    steps.start("one", launch)
    assert steps.wait("one", timeout=60) == {"ended": {"exit_code": 0, "signal": 0}}
    assert (tmp_path / "out").read_text() == "hi\n"
    assert sorted(p.name for p in shared.iterdir() if p.name.startswith("imported-")) == []


def test_the_local_rays_reaper_imports_nothing_from_the_controllers_working_directory(tmp_path):
    shared = tmp_path / "shared"
    planted(shared, "select", "shutil", "ctypes")
    ray_dir = tmp_path / "ray"
    ray_dir.mkdir()
    # a stand-in controller, started in that folder (-P: so that it, unlike the reaper, is not the one tested)
    controller = subprocess.Popen([sys.executable, "-P", "-c", (
        "import time\n"
        "from vipu.workers import local_ray\n"
        f"local_ray.start_reaper({str(ray_dir)!r})\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n")], cwd=shared, stdout=subprocess.PIPE, text=True)
    assert controller.stdout.readline() == "started\n"
    controller.kill()
    controller.wait(timeout=30)
    deadline = time.monotonic() + 30
    while ray_dir.exists() and time.monotonic() < deadline:  # the reaper's last act once the controller has gone
        time.sleep(0.1)
    assert not ray_dir.exists()
    assert sorted(p.name for p in shared.iterdir() if p.name.startswith("imported-")) == []
