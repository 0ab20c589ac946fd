"""A --secure controller starts only in a folder no other user may write: Ray's workers import Python from it, as
the controller's user (walk44: a json.py left there ran as root)."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import console_script
from vipu.server.working_dir import writable_by_others


def folder(parent, name: str, mode: int):
    path = parent / name
    path.mkdir()
    path.chmod(mode)
    return path


def test_a_folder_only_its_user_may_write_is_safe_under_a_sticky_one(tmp_path):
    assert writable_by_others(str(folder(tmp_path, "own", 0o755))) is None
    sticky = folder(tmp_path, "sticky", 0o1777)  # /tmp: no one may rename what is not theirs
    assert writable_by_others(str(folder(sticky, "own", 0o700))) is None


def test_a_folder_others_may_write_in_or_swap_is_named(tmp_path):
    shared = folder(tmp_path, "shared", 0o777)
    assert writable_by_others(str(shared)) == f"{shared} may be written by every user"
    sticky = folder(tmp_path, "sticky", 0o1777)  # sticky: files may still be added to it
    assert writable_by_others(str(sticky)) == f"{sticky} may be written by every user"
    assert writable_by_others(str(folder(shared, "own", 0o755))) == f"{shared} may be written by every user"
    group = folder(tmp_path, "group", 0o775)
    assert writable_by_others(str(group)) is None  # its group is the controller's own
    if os.geteuid() == 0:
        os.chown(group, 0, 65534)
        assert writable_by_others(str(group)) == f"{group} may be written by group 65534"
        theirs = folder(tmp_path, "theirs", 0o755)
        os.chown(theirs, 65534, 65534)
        assert writable_by_others(str(folder(theirs, "own", 0o700))) == \
            f"{theirs} belongs to another user (uid 65534)"


def test_a_secure_start_in_a_folder_all_may_write_is_refused_before_anything_is_made(tmp_path):
    shared = folder(tmp_path, "shared", 0o777)
    state = tmp_path / "state"
    out = subprocess.run([console_script("vipu-server"), "--secure", "--ray", "local", "--port", "0", "--metrics-port",
                          "-1", "--state-dir", str(state)], cwd=shared, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"vipu-server: error: --secure: it starts in {shared}, and {shared} may be written by every user; Ray's"
        " workers import Python from the folder the controller starts in, as its user: start vipu-server in a folder"
        " only that user or root may write, e.g. `cd /`"]
    assert not state.exists()


def test_a_secure_start_in_a_folder_removed_since_is_refused_too(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    out = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$@"', console_script("vipu-server"),
                          "--secure", "--ray", "local", "--port", "0", "--metrics-port", "-1", "--state-dir",
                          str(tmp_path / "state")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith(
        "vipu-server: error: --secure: its working directory cannot be looked at (No such file or directory); "), \
        out.stderr
    assert not (tmp_path / "state").exists()


def test_a_secure_start_without_ray_is_not_refused_for_its_folder(tmp_path):
    """Without Ray nothing imports from the working directory (the supervisors start with -P from /): /tmp will do.
    The start goes on to the next check, a TLS pair that is not there."""
    shared = folder(tmp_path, "shared", 0o777)
    missing = str(tmp_path / "no-such.pem")
    out = subprocess.run([console_script("vipu-server"), "--secure", "--ray", "off", "--port", "0", "--metrics-port",
                          "-1", "--state-dir", str(tmp_path / "state"), "--tls-cert", missing, "--tls-key", missing],
                         cwd=shared, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--secure" not in out.stderr and "no-such.pem" in out.stderr, out.stderr
