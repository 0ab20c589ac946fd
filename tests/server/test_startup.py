"""What a controller refuses at start: a port or a state folder another controller has, TLS files that are not a
pair, and a state folder or database it cannot use. Each gets one line naming the flag and the fix, and exit 2."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys


from tests.conftest import console_script


def start(*args: str) -> subprocess.CompletedProcess:
    cmd = [console_script("vipu-server"), "--ray", "off", "--metrics-port", "-1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_a_second_controller_on_the_same_port_is_refused(server, tmp_path):
    """gRPC's default SO_REUSEPORT let both listen, and calls went to either in turn."""
    second = start("--port", str(server.port), "--state-dir", str(tmp_path / "other"))
    assert second.returncode == 4  # in use: the CLI's conflict
    assert second.stderr.strip().splitlines() == [
        f"vipu-server: error: cannot listen on 127.0.0.1:{server.port}: the port is in use; stop what holds it or"
        " pick another --port"
    ]
    assert not (tmp_path / "other").exists()  # regression: made and initialised, then left


def test_a_start_refused_for_its_port_leaves_the_state_folder_as_a_clean_stop_left_it(tmp_path):
    """Regression: the state was opened before the port was tried, and the refusal (exit 4) left -wal, -shm and
    vipu.generation beside it, as a crash leaves them."""
    from vipu.control.startup import open_plane

    state = tmp_path / "state"
    open_plane("bow-pod64", state, "127.0.0.1", 0).close()
    before = {p.name: p.read_bytes() for p in state.iterdir()}
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = str(held.getsockname()[1])
        for flags, flag in ((["--port", port], "--port"), (["--port", "0", "--device-port", port], "--device-port"),
                            (["--port", "0", "--metrics-port", port], "--metrics-port")):
            out = start(*flags, "--state-dir", str(state))
            assert out.returncode == 4, out.stderr
            assert out.stderr.strip().endswith(f"the port is in use; stop what holds it or pick another {flag}")
            assert {p.name: p.read_bytes() for p in state.iterdir()} == before, flags


def test_a_second_controller_on_the_same_state_folder_is_refused_and_a_crash_frees_it(server_factory, tmp_path):
    first = server_factory(state_dir=tmp_path / "state")
    second = start("--port", "0", "--state-dir", str(tmp_path / "state"))
    assert second.returncode == 4  # in use, as a port is (it was 2, bad input, while the port's was 1)
    assert second.stderr.strip() == (
        f"vipu-server: error: state folder {tmp_path / 'state'} is in use by another vipu-server"
        f" (pid {first.proc.pid}); stop it first, or give this one another --state-dir"
    )
    first.kill(signal.SIGKILL)
    assert first.restart().proc.poll() is None  # the kernel dropped the dead process's lock


def make_pair(folder, name: str):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder / f"{name}.key",
                    "-out", folder / f"{name}.crt", "-days", "1", "-subj", "/CN=localhost"],
                   check=True, capture_output=True)
    return folder / f"{name}.crt", folder / f"{name}.key"


def test_unusable_state_and_tls_files_get_one_line_each(tmp_path):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "vipu.sqlite3").write_text("not a database")
    cert, key = make_pair(tmp_path, "a")
    _, other_key = make_pair(tmp_path, "b")
    state = ["--state-dir", str(tmp_path / "ok")]
    cases = [
        (["--state-dir", str(tmp_path / "a-file")], "is a file, not a folder; give a folder"),
        (["--state-dir", "/proc/nope"], "cannot be used (No such file or directory); give a folder"),
        (["--state-dir", str(tmp_path / "corrupt")],
         "cannot be read (file is not a database): SQLite cannot read its header"),
        ([*state, "--tls-cert", str(cert), "--tls-key", str(other_key)], "KEY_VALUES_MISMATCH"),
        ([*state, "--tls-cert", str(key), "--tls-key", str(key)], "is not a usable PEM certificate chain"),
    ]
    for args, needle in cases:
        got = start("--port", "0", *args)
        assert got.returncode == 2, got
        lines = got.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("vipu-server: error: ") and needle in lines[0], got.stderr
    assert not (tmp_path / "ok").exists()  # refused over the TLS pair: regression, its state folder was made


def test_secure_without_tls_off_loopback_warns_that_keys_travel_in_clear(server_factory):
    for host, warned in (("0.0.0.0", True), ("127.0.0.1", False)):
        server = server_factory(extra=["--secure", "--host", host])
        server.kill(signal.SIGTERM)
        err = server.stderr_text()
        assert (f"warning: --secure on {host} without --tls-cert" in err) is warned, err


def _ray_processes(folder: str) -> set[str]:
    """Processes of the local Ray that lives in `folder` (its GCS and raylet name it in their arguments), and every
    renamed Ray process (its agents and workers call themselves ray::...)."""
    out = subprocess.run(["pgrep", "-af", f"{folder}|^ray::"], capture_output=True, text=True).stdout.splitlines()
    return {line for line in out if "pgrep" not in line}


def test_a_stop_signal_while_ray_starts_stops_the_controller_and_its_ray(tmp_path):
    """Regression: Ctrl-C in the first minute, while the local Ray started, was lost (the controller went on to
    listen), and a SIGTERM then left Ray's processes and folder behind. One signal waits for Ray's start to finish
    and shuts it down; a second ends it at once."""
    import time
    from pathlib import Path

    for signals, said in (((signal.SIGINT,), "stopped while starting Ray; nothing was served"),
                          ((signal.SIGTERM, signal.SIGTERM), "its start abandoned); nothing was served")):
        proc = subprocess.Popen([console_script("vipu-server"), "--port", "0", "--metrics-port", "0", "--state-dir",
                                 str(tmp_path / str(len(signals))), "--ray", "local"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        folder = f"/tmp/vipu-ray-{proc.pid}"
        before = _ray_processes(folder)  # the test session's own Ray
        deadline = time.monotonic() + 60
        while not Path(folder).exists() and time.monotonic() < deadline:  # Ray has begun to start
            time.sleep(0.02)
        heard = ""
        for sig in signals:
            # Each signal once the last was heard: two sent while the controller sits in a C call of Ray's start
            # would be pending at once and count as one (the second then came too late to abandon the start).
            proc.send_signal(sig)
            heard += _line_with(proc, "vipu-server: stop")
        out, err = proc.communicate(timeout=120)
        err = heard + err
        assert proc.returncode == 0 and said in err, (out, err)
        assert "listening" not in out
        deadline = time.monotonic() + 60  # Ray's processes end slowly on a loaded machine
        while (Path(folder).exists() or _ray_processes(folder) - before) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(folder).exists() and _ray_processes(folder) - before == set(), _ray_processes(folder)


def _line_with(proc: subprocess.Popen, text: str, timeout: float = 60) -> str:
    """What `proc` wrote to stderr up to `text` and the end of its line, read past Python's buffer (os.read), so
    that communicate() later reads the rest."""
    import os
    import select
    import time

    fd, read, deadline = proc.stderr.fileno(), "", time.monotonic() + timeout  # type: ignore[union-attr]
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 1.0)[0]:
            chunk = os.read(fd, 4096).decode()
            read += chunk
            if not chunk or (text in read and read.endswith("\n")):
                return read
    raise AssertionError(f"no line with {text!r} in {timeout} s: {read}")


def test_a_controller_that_only_queues_never_loads_the_planner_or_numpy():
    """They were a third of every start (and every test's controller): the planner and the training emulator are
    imported with the first `train` job, not with the controller."""
    probe = ("import sys, vipu.server.app, vipu.cli.main; "
             "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('vipu.jobs.planner', 'vipu.fabric'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_ray_address_where_nothing_listens_is_refused_at_once(tmp_path):
    """Regression: ray.init retried such an address for minutes, printing only Ray's warnings, and the controller
    neither served nor said why."""
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
    out = start("--port", "0", "--state-dir", str(tmp_path / "new"), "--ray", address)
    assert out.returncode == 1
    assert (f"vipu-server: error: cannot start or reach Ray ({address}): nothing answers at {address}"
            in out.stderr), out.stderr
    assert "`ray start --head`" in out.stderr and "use --ray off" in out.stderr
    assert not (tmp_path / "new").exists()  # refused before the state folder is made (README)


def test_a_malformed_ray_address_metrics_or_device_port_is_bad_input(tmp_path):
    """Regression: --ray 127.0.0.1:-1 retried for minutes at full CPU; --metrics-port 99999999999999999999 was a
    traceback and exit 1; --metrics-port -5 silently meant off."""
    for flags, line in [
        (["--ray", "127.0.0.1:-1"], "--ray 127.0.0.1:-1: give local, off, auto, or a Ray cluster's HOST:PORT"),
        (["--ray", "foo"], "--ray foo: give local, off, auto, or a Ray cluster's HOST:PORT"),
        (["--metrics-port", "99999999999999999999"], "--metrics-port is 99999999999999999999; give 0 to 65535, or -1"),
        (["--metrics-port", "-5"], "--metrics-port is -5; give 0 to 65535, or -1 to turn metrics off"),
        (["--device-port", "-5"], "--device-port is -5; give 0 to 65535, or -1 to turn it off"),
        (["--device-threads", "0"], "--device-threads is 0; give 1 to 8192"),
        (["--tensor-memory", "lots"], "--tensor-memory 'lots' is not a size; give bytes above 0, e.g. 8G"),
        (["--advertise-host", ""], "--advertise-host is empty; give the host name or address jobs reach this"),
    ]:
        out = start("--port", "0", "--state-dir", str(tmp_path), *flags)
        assert out.returncode == 2 and out.stderr.startswith(f"vipu-server: error: {line}"), (flags, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (flags, out.stderr)


def test_a_controller_killed_with_sigkill_leaves_no_local_ray_behind(tmp_path):
    """Regression: Ray's agents (ray::DashboardAgent, ray::RuntimeEnvAgent) ignore SIGTERM and lingered under init
    after a kill -9 of a --ray local controller. Its reaper notes the controller's descendants and kills them once it
    has gone. Here a stand-in controller starts the reaper and two children deaf to SIGTERM, as Ray's agents are (a
    real local Ray takes half a minute to start; the reaper does not care what the children are)."""
    import time

    from vipu.workers import local_ray

    ray_dir = tmp_path / "ray"
    ray_dir.mkdir()
    controller = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "from vipu.workers import local_ray\n"
        "local_ray.adopt_orphans()\n"
        "deaf = \"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)\"\n"
        "kids = [subprocess.Popen([sys.executable, '-c', deaf]) for _ in range(2)]\n"
        f"local_ray.start_reaper({str(ray_dir)!r})  # returns once it has noted the children\n"
        "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
        "time.sleep(300)\n")], stdout=subprocess.PIPE, text=True)
    children = [int(p) for p in controller.stdout.readline().split()]
    controller.kill()
    controller.wait(timeout=30)
    deadline = time.monotonic() + 30
    while (any(map(local_ray._alive, children)) or ray_dir.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(local_ray._alive, children)) and not ray_dir.exists()
