"""A start that the disk fails is told from one that a damaged database fails, and each is worded with its fix
(vipu/store_faults.py). SQLite's errors are real where a test can make them (a read-only connection, a folder that
is not there, a file that is no database); a full disk's I/O error is made as SQLite raises it (its code and name on
the exception), and the file system's answer (statvfs) is injected where the test cannot fill or remount a disk."""

from __future__ import annotations

import errno
import os
import sqlite3

import pytest

from vipu.store_faults import cannot_write, is_disk_fault, is_unreadable_header


def sqlite_error(make) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as raised:
        make()
    return raised.value


def io_error() -> sqlite3.OperationalError:
    """SQLite's error for a -shm file it cannot grow on a full disk, as Python 3.11 raises it."""
    e = sqlite3.OperationalError("disk I/O error")
    e.sqlite_errorcode, e.sqlite_errorname = 4874, "SQLITE_IOERR_SHMSIZE"
    return e


def file_system(monkeypatch, read_only: bool = False, full: bool = False) -> None:
    flag = os.ST_RDONLY if read_only else 0
    monkeypatch.setattr(os, "statvfs", lambda path: os.statvfs_result(
        (4096, 4096, 256, 0 if full else 100, 0 if full else 100, 64, 60, 60, flag, 255)))


def test_disk_faults_are_told_from_damage(tmp_path):
    database = tmp_path / "db"
    sqlite3.connect(database).execute("CREATE TABLE t (x)")
    read_only = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    faults = [
        sqlite_error(lambda: read_only.execute("INSERT INTO t VALUES (1)")),  # SQLITE_READONLY
        sqlite_error(lambda: sqlite3.connect(tmp_path / "nowhere" / "db")),  # SQLITE_CANTOPEN
        io_error(),
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EROFS, "Read-only file system"),
        OSError(errno.EACCES, "Permission denied"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
    ]
    assert [is_disk_fault(e) for e in faults] == [True] * len(faults)
    not_a_database = sqlite_error(lambda: sqlite3.connect(garbage).execute("PRAGMA journal_mode=WAL"))
    assert not_a_database.sqlite_errorname == "SQLITE_NOTADB"
    assert not is_disk_fault(not_a_database) and is_unreadable_header(not_a_database)
    malformed = sqlite3.DatabaseError("database disk image is malformed")
    malformed.sqlite_errorcode, malformed.sqlite_errorname = 11, "SQLITE_CORRUPT"
    assert not is_disk_fault(malformed) and not is_unreadable_header(malformed)
    assert not is_disk_fault(OSError(errno.ENOENT, "No such file or directory"))


@pytest.mark.parametrize("error, disk, said", [
    (OSError(errno.EROFS, "Read-only file system"), {}, "(Read-only file system): the file system is read-only; its"
     " records are kept: remount it read-write and start again"),
    (OSError(errno.ENOSPC, "No space left on device"), {}, "(No space left on device): the file system holding it is"
     " full; its records are kept: free space and start again"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), {}, "(Disk quota exceeded): this user's disk quota is used up; its"
     " records are kept: free space under the quota (or raise it) and start again"),
    (OSError(errno.EACCES, "Permission denied"), {}, "(Permission denied): this user may not write it; its records are"
     " kept: give this user write access to the folder and its files (or run the controller as the user that owns"
     " them) and start again"),
    (io_error(), {"full": True}, "(disk I/O error, SQLITE_IOERR_SHMSIZE): the file system holding it is full; its"
     " records are kept: free space and start again"),
    (io_error(), {"read_only": True}, "(disk I/O error, SQLITE_IOERR_SHMSIZE): the file system is read-only; its"
     " records are kept: remount it read-write and start again"),
    (io_error(), {}, "(disk I/O error, SQLITE_IOERR_SHMSIZE); its records are kept: free space (or fix the disk) and"
     " start again"),
])
def test_each_disk_fault_is_worded_with_its_cause_and_fix_keeping_the_folder(tmp_path, monkeypatch, error, disk,
                                                                           said):
    file_system(monkeypatch, **disk)
    refusal = cannot_write(tmp_path, error)
    assert refusal.code == "UNAVAILABLE"  # vipu-server exits 5, which systemd restarts (2 it does not)
    assert refusal.message == f"the state folder {tmp_path} cannot be written {said}"


def test_an_io_error_under_a_file_size_limit_names_the_limit(tmp_path, monkeypatch):
    """walk32: under `ulimit -f` SQLite's I/O error was worded as a disk to mend."""
    file_system(monkeypatch)
    import resource
    monkeypatch.setattr(resource, "getrlimit", lambda which: (4096, resource.RLIM_INFINITY))
    assert cannot_write(tmp_path, io_error()).message == (
        f"the state folder {tmp_path} cannot be written (disk I/O error, SQLITE_IOERR_SHMSIZE): a file size limit of"
        " this process (ulimit -f) stops its files growing; its records are kept: raise the limit and start again")


def test_a_folder_without_a_state_may_be_replaced_by_another(tmp_path):
    refusal = cannot_write(tmp_path, OSError(errno.EROFS, "Read-only file system"), holds_state=False)
    assert refusal.message == (f"the state folder {tmp_path} cannot be written (Read-only file system): the file"
                               " system is read-only; remount it read-write, or give another --state-dir")


def test_another_process_holding_the_lock_is_named_whatever_the_disk(tmp_path, monkeypatch):
    database = tmp_path / "db"
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")  # a backup tool, a sqlite3 shell
    busy = sqlite_error(lambda: sqlite3.connect(database, timeout=0).execute("INSERT INTO t VALUES (1)"))
    holder.execute("ROLLBACK")
    file_system(monkeypatch, full=True)
    assert is_disk_fault(busy)
    assert cannot_write(tmp_path, busy).message == (
        f"the state folder {tmp_path} cannot be written (database is locked, SQLITE_BUSY): another process holds the"
        " database's lock; its records are kept: let it finish (a backup, a sqlite3 shell) and start again")
