"""The local Ray's folder: made for the controller's user alone, since Ray makes each folder of its own (sockets,
logs, spilled objects) open to every user (walk44: another user moved the raylet's socket, and every new actor
hung)."""

from __future__ import annotations

import os
import stat

from vipu.workers import local_ray


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_folder_is_made_for_its_user_alone_and_taken_again_by_the_same_process(tmp_path):
    path = str(tmp_path / "vipu-ray-123")
    assert local_ray.private_folder(path) == path and mode(path) == 0o700
    assert local_ray.private_folder(path) == path  # an earlier start of this process's Ray


def test_a_name_someone_else_took_first_is_left_to_them_and_a_new_folder_made_beside_it(tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    taken = {"open": tmp_path / "vipu-ray-1", "link": tmp_path / "vipu-ray-2", "file": tmp_path / "vipu-ray-3"}
    taken["open"].mkdir(mode=0o777)
    taken["open"].chmod(0o777)
    taken["link"].symlink_to(other)
    taken["file"].write_text("")
    if os.geteuid() == 0:  # one of another user's, even if private: they could open it again
        taken["theirs"] = tmp_path / "vipu-ray-4"
        taken["theirs"].mkdir(mode=0o700)
        os.chown(taken["theirs"], 65534, 65534)
    for kind, path in taken.items():
        made = local_ray.private_folder(str(path))
        assert made != str(path) and os.path.basename(made).startswith(f"{path.name}-"), kind
        assert os.path.dirname(made) == str(tmp_path) and mode(made) == 0o700, kind
        assert os.lstat(made).st_uid == os.geteuid(), kind
    assert list(other.iterdir()) == []


def test_stale_folders_of_either_name_are_removed_and_a_live_controllers_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(local_ray, "TMP", tmp_path)
    dead = 2 ** 22 + 1  # above Linux's largest pid: no process has it
    for name in (f"vipu-ray-{dead}", f"vipu-ray-{dead}-abc123", f"vipu-ray-{os.getpid()}-abc123"):
        (tmp_path / name).mkdir()
    local_ray.remove_stale_folders()
    assert [p.name for p in tmp_path.iterdir()] == [f"vipu-ray-{os.getpid()}-abc123"]
