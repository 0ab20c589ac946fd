"""The state folder a controller owns: one controller per folder, for as long as it runs, and no one else's to read.

Why a lock: two controllers on one folder would each keep their own idea of which IPUs are free, hand the same IPUs
out twice and write over each other's records. flock is released by the kernel when the process ends, even by
SIGKILL, so a crash never leaves the folder locked; the file is opened close-on-exec, so Ray's processes started
by the controller do not inherit the lock.

Why 0700 and 0600, and no symlinks followed: the database holds every user's jobs and key hashes, and admin.key
the admin's key. Another local user must not read them, nor plant a file or a symlink for the controller to write
its secrets into (a 0666 admin.key made in advance, a controller.lock pointing at a file of the controller's user).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import IO, NamedTuple

from vipu.errors import FailedPrecondition, InvalidArgument
from vipu.store_faults import cannot_write, is_disk_fault
from vipu.store_generation import Generation

LOCK_NAME = "controller.lock"


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def _own_folder(state_dir: Path) -> None:
    """Create the folder 0700, or check an existing one is this user's own and make it 0700."""
    state_dir.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    info = os.stat(state_dir, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        if info.st_uid != os.geteuid():  # planted by another user: it chooses where our state and keys go
            raise InvalidArgument(
                f"--state-dir {state_dir} is a symbolic link of uid {info.st_uid}'s, not this user's ({os.geteuid()}):"
                " another user chose where it points; give a folder (or a link) of this user's own")
        info = os.stat(state_dir)  # a symlinked folder is the operator's choice; its target must be ours
    if not stat.S_ISDIR(info.st_mode):
        raise FileExistsError
    if info.st_uid != os.geteuid():
        raise InvalidArgument(
            f"--state-dir {state_dir} belongs to uid {info.st_uid}, not to this user ({os.geteuid()}): another user"
            " could read or plant records there; give a folder of this user's own"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        _check_tightening(state_dir, info)
        os.chmod(state_dir, PRIVATE_DIR)


# what shows a folder others may read is a state folder an earlier version left so, not a folder others use
STATE_NAMES = {"vipu.sqlite3", "vipu.sqlite3-wal", "vipu.generation", "state.id", "admin.key", LOCK_NAME}


def _check_tightening(state_dir: Path, info: os.stat_result) -> None:
    """Refuse to make a shared folder 0700: `--state-dir /tmp` as root would lock every other user out of /tmp."""
    names = set(os.listdir(state_dir))
    if info.st_mode & stat.S_ISVTX or (names and not names & STATE_NAMES):
        raise InvalidArgument(
            f"--state-dir {state_dir} is a folder others may use (mode {stat.S_IMODE(info.st_mode):04o}, holding"
            f" {len(names)} entries not the controller's); the controller keeps its state in a folder only it may"
            f" enter: give a folder of its own, e.g. --state-dir {Path(state_dir) / 'vipu-state'}")


def open_private(path: Path, flags: int, exclusive: bool = False, tighten: bool = False) -> int:
    """A file descriptor for a 0600 file of this user's, never through a symlink; InvalidArgument naming the file
    and the fix for a symlink, a file of another user's or one others may read or write. `tighten`: a file of this
    user's that others may read is made 0600 instead (state written by an earlier version, which left it 0644)."""
    # O_NONBLOCK: opening a FIFO for reading waits for a writer, for ever and deaf to SIGTERM
    flags |= os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_EXCL if exclusive else 0)
    try:
        fd = os.open(path, flags, PRIVATE_FILE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InvalidArgument(f"{path} is a symlink; the controller writes only its own files: remove it")
        if e.errno in (errno.EISDIR, errno.ENXIO):  # a folder; a FIFO without a reader, or a socket
            raise _not_regular(path, os.lstat(path).st_mode) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _not_regular(path, info.st_mode)
    os.set_blocking(fd, True)
    problem, fix = None, "remove it (the controller makes its own, mode 0600)"
    if info.st_uid != os.geteuid():  # the database itself, restored as another user: removing it loses the queue
        problem = f"belongs to uid {info.st_uid}, not to this user ({os.geteuid()})"
        fix = (f"if it is this state's own (restored or copied as another user), give it back with `chown"
               f" {os.geteuid()} {path}`; if not, move it out of the state folder")
    elif stat.S_IMODE(info.st_mode) & 0o077 and tighten:
        os.fchmod(fd, PRIVATE_FILE)
    elif stat.S_IMODE(info.st_mode) & 0o077:
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}, which lets other users read or write it"
    if problem:
        os.close(fd)
        raise InvalidArgument(f"{path} {problem}; {fix}")
    return fd


def _not_regular(path: Path, mode: int) -> InvalidArgument:
    what = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file")
    return InvalidArgument(f"{path} is {what}, not a file the controller made: move it out of the state folder (the"
                           " controller makes its own)")


def private_database(path: Path) -> None:
    """The database file, 0600 and not a symlink, before SQLite opens it: its -wal and -shm files take its mode.
    Its generation marker (store_generation.py) is checked so too: it is replaced by a rename, which would drop a
    symlink without a word."""
    os.close(open_private(path, os.O_RDWR, tighten=True))
    for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"), Generation(path).marker):
        if side.exists() or side.is_symlink():  # (left 0644 by an earlier version)
            os.close(open_private(side, os.O_RDWR, tighten=True))


def read_private(path: Path) -> str | None:
    """A secret file's text (None if there is none), refused as open_private refuses."""
    if not (path.exists() or path.is_symlink()):
        return None
    with os.fdopen(open_private(path, os.O_RDONLY)) as f:
        return f.read()


def write_private(path: Path, text: str) -> None:
    """A new 0600 file holding `text`; an old one must pass read_private's checks and is replaced."""
    if read_private(path) is not None:
        path.unlink()
    with os.fdopen(open_private(path, os.O_WRONLY, exclusive=True), "w") as f:
        f.write(text)


class Claim(NamedTuple):
    """A state folder locked by this process: keep it for as long as the folder is used."""

    file: IO[str]  # the lock file, open and locked
    made: tuple[Path, ...]  # what claim() created (the folder, the lock file), for withdraw()


def claim(state_dir: Path) -> Claim:
    """Create the folder if need be and lock it.

    Why the lock comes before the start's checks, although a refused start must leave the folder as it was: the
    checks read files (state.id, admin.key, the database) that a controller already serving the folder writes, so a
    second start must be told the folder is in use, not misjudge a folder in the middle of a write; withdraw()
    removes what this made when a check refuses the start."""
    existed = os.path.lexists(state_dir)
    made = [] if existed else [Path(state_dir)]
    try:
        _own_folder(state_dir)
        path = Path(state_dir) / LOCK_NAME
        while True:
            fresh = not os.path.lexists(path)
            lock = os.fdopen(open_private(path, os.O_RDWR | os.O_APPEND, tighten=True), "a+")
            _lock(lock, state_dir)
            if os.path.lexists(path) and os.path.samestat(os.fstat(lock.fileno()), os.lstat(path)):
                break
            lock.close()  # a refused start removed the file between this one's open and lock: lock the new one
        if fresh:
            made.append(path)
    except FileExistsError:
        raise InvalidArgument(f"--state-dir {state_dir} is a file, not a folder; give a folder") from None
    except OSError as e:
        _unmake(made)
        if is_disk_fault(e) and existed:  # the disk, not the flag: its state is kept for once the disk is mended
            raise cannot_write(state_dir, e, holds_state=_holds_state(Path(state_dir))) from None
        raise InvalidArgument(
            f"--state-dir {state_dir} cannot be used ({e.strerror}); give a folder this user can create and write"
        ) from None
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return Claim(lock, tuple(made))


def _holds_state(state_dir: Path) -> bool:
    """Whether the folder holds anything but a lock file: a state the advice must not leave behind (True when it
    cannot be listed)."""
    try:
        return any(name != LOCK_NAME for name in os.listdir(state_dir))
    except OSError:
        return True


def _lock(lock: IO[str], state_dir: Path) -> None:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip()
        lock.close()
        raise FailedPrecondition(
            f"state folder {state_dir} is in use by another vipu-server{f' (pid {holder})' if holder else ''}; stop"
            " it first, or give this one another --state-dir"
        ) from None


def withdraw(held: Claim) -> None:
    """Undo claim() for a start that was refused: the lock file and the folder are removed if it made them. The file
    goes while still locked, so a start that opened it meanwhile sees it gone once it holds the lock (claim)."""
    _unmake(held.made)
    held.file.close()


def _unmake(made) -> None:
    for path in reversed(made):
        try:
            path.rmdir() if path.is_dir() else path.unlink()
        except OSError:
            pass  # (a folder that holds more than this start made stays)
