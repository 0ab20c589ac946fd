"""Why a start cannot use its state: a fault of the disk under the state (full, read-only, not this user's to write,
an I/O error), or damage to the database itself.

Why they are told apart: a disk fault leaves every record as it was and goes once the disk is mended, so the start
exits 5 (UNAVAILABLE) and says to mend the disk and start again in the same folder; damage never mends itself, so
the start exits 2 and names the repair. Under systemd (deploy/systemd: RestartPreventExitStatus=2) a full disk read
as damage stopped the restarts for good, and the advice to copy or move the database away would have left a sound
queue behind. SQLite says which in its error code (sqlite_errorcode, Python 3.11): its primary code is the low byte.
Its I/O errors do not say the cause (a full disk creating the -shm file is SQLITE_IOERR_SHMSIZE, "disk I/O error"),
so the file system is asked (statvfs).
"""

from __future__ import annotations

import errno
import os
import resource
import sqlite3
from pathlib import Path

from vipu.errors import Unavailable

# SQLite's primary result codes that say the disk, or access to it, failed (https://sqlite.org/rescode.html)
SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 3, 5, 6, 8
SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 10, 13, 14
SQLITE_CORRUPT, SQLITE_NOTADB = 11, 26  # damage: the file's bytes are wrong
DISK_CODES = frozenset((SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL,
                        SQLITE_CANTOPEN))

FULL = ("the file system holding it is full", "free space")
READ_ONLY = ("the file system is read-only", "remount it read-write")
NOT_ALLOWED = ("this user may not write it", "give this user write access to the folder and its files (or run the"
                                             " controller as the user that owns them)")
# errno -> (the cause, its fix), both in words
CAUSES = {
    errno.ENOSPC: FULL,
    errno.EDQUOT: ("this user's disk quota is used up", "free space under the quota (or raise it)"),
    errno.EROFS: READ_ONLY,
    errno.EACCES: NOT_ALLOWED,
    errno.EPERM: NOT_ALLOWED,
    errno.EFBIG: ("a file size limit of this process (ulimit -f) stops its files growing", "raise the limit"),
    errno.EIO: ("the disk reports an I/O error", "check the disk (dmesg) and mend or replace it"),
}
BY_CODE = {
    SQLITE_FULL: FULL,
    SQLITE_READONLY: NOT_ALLOWED,
    SQLITE_PERM: NOT_ALLOWED,
    SQLITE_BUSY: ("another process holds the database's lock", "let it finish (a backup, a sqlite3 shell)"),
    SQLITE_LOCKED: ("another process holds the database's lock", "let it finish (a backup, a sqlite3 shell)"),
    SQLITE_CANTOPEN: ("SQLite cannot open it or its -wal and -shm files", "check this user can create files in the"
                                                                           " folder, and that it has space"),
}
UNKNOWN = ("", "free space (or fix the disk)")


def is_disk_fault(e: BaseException) -> bool:
    """Whether `e` says the disk (or access to it) failed, not that the database is damaged."""
    if isinstance(e, sqlite3.Error):
        return _primary(e) in DISK_CODES
    return isinstance(e, OSError) and e.errno in CAUSES


def is_unreadable_header(e: BaseException) -> bool:
    """Whether SQLite cannot read the file as a database at all (its header): nothing can be copied out of it."""
    return isinstance(e, sqlite3.Error) and _primary(e) == SQLITE_NOTADB


def cannot_write(folder: Path, e: BaseException, holds_state: bool = True) -> Unavailable:
    """The refusal of a start whose state folder the disk does not let it use, naming the cause and its fix.
    `holds_state`: the folder holds a state, which the fix keeps (else another folder will do as well)."""
    cause, fix = _cause(Path(folder), e)
    said = f"{e.strerror}" if isinstance(e, OSError) and e.strerror else f"{e}"
    code = getattr(e, "sqlite_errorname", None)
    if code and code not in said:
        said += f", {code}"
    cause = f": {cause}" if cause else ""
    if holds_state:
        return Unavailable(f"the state folder {folder} cannot be written ({said}){cause}; its records are kept:"
                           f" {fix} and start again")
    return Unavailable(f"the state folder {folder} cannot be written ({said}){cause}; {fix}, or give another"
                       " --state-dir")


def _cause(folder: Path, e: BaseException) -> tuple[str, str]:
    if isinstance(e, OSError) and e.errno in CAUSES:
        return CAUSES[e.errno]
    code = _primary(e) if isinstance(e, sqlite3.Error) else None
    if code in (SQLITE_BUSY, SQLITE_LOCKED):  # the lock, whatever the disk
        return BY_CODE[code]
    # the file system, then this process's file size limit, say more than SQLite's code
    return _file_system(folder) or _size_limit() or BY_CODE.get(code, UNKNOWN)


def _size_limit() -> tuple[str, str] | None:
    """A file size limit on this process (ulimit -f): SQLite reports the write it stopped as an I/O error."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return CAUSES[errno.EFBIG] if soft != resource.RLIM_INFINITY else None


def _file_system(folder: Path) -> tuple[str, str] | None:
    """READ_ONLY or FULL if the file system holding `folder` (or its nearest existing parent) is so, else None."""
    for place in (folder, *folder.parents):
        try:
            fs = os.statvfs(place)
        except OSError:
            continue
        if fs.f_flag & os.ST_RDONLY:
            return READ_ONLY
        if fs.f_bavail == 0 or (fs.f_files and fs.f_favail == 0):
            return FULL
        return None
    return None


def _primary(e: sqlite3.Error) -> int | None:
    code = getattr(e, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF
