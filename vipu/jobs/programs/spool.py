"""Where a controller's program scripts, run locks and exit records wait, on every node: a folder in the system's
temporary one, which every job's user may pass through (the controller's state folder may be closed to them).

Why its name is random and kept in the state folder: a name worked out from the state folder's path let any local
user make that folder first, in a fresh /tmp, and stop every program from starting (a supervisor refuses a spool that
is not its own, stepd.own_spool). A name is drawn whenever there is no folder of the controller's own to find again,
and its first supervisor makes the folder: no one else can know the name before that (jobs' programs learn it from
their scripts' paths once it exists). A restart reuses the name only while the folder is there and its own, to find
what its supervisors left there (a kill -9 leaves it); a folder of that name that is not its own (made by another
user while /tmp was cleaned) gets a new name drawn, as does a folder gone, since a user who learnt the old name could
make it first. A clean stop removes the folder once nothing in it is needed (`tidy`), so a controller that is gone
leaves none behind, and one that never ran a program makes none; a state folder thrown away takes its spool with it
(`discard`: tests' and the demo's controllers).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Callable

from vipu.errors import InvalidArgument
from vipu.jobs.programs.run_locks import holder, lock_path

NAME_FILE = "spool"  # in the state folder: the spool's path
_RUN_FILE = re.compile(r"job(\d+)\.run(\d+)\.(exit|exit\.new|lock|script)")  # what supervisors write there
_NAME = re.compile(r"vipu-spool-[0-9a-f]{12}([0-9a-f]{4})?")  # (12: named from the state folder's path, before)


def spool_for(state_dir: Path | None) -> str:
    """The controller's spool folder, not made here (its first supervisor makes it): the one its state folder names if
    that is still there and its own, else a new name (named there). Without a state folder, a new name each time."""
    spool = kept_spool(state_dir)
    while spool is None:
        drawn = os.path.join(tempfile.gettempdir(), f"vipu-spool-{secrets.token_hex(8)}")
        spool = None if os.path.lexists(drawn) else drawn  # (a name taken already: another)
    if state_dir is not None:  # (written each time: a file an earlier version left readable is made 0600)
        kept = Path(state_dir) / NAME_FILE
        partial = kept.with_name(NAME_FILE + ".new")
        partial.unlink(missing_ok=True)
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:  # (a state file)
            f.write(spool + "\n")
        os.replace(partial, kept)
    return spool


def kept_spool(state_dir: Path | None) -> str | None:
    """The spool an earlier controller of the state folder left, to find what its supervisors left there: None if it
    named none, or its folder is gone or not its own. Makes and writes nothing (a restart's recovery reads it)."""
    if state_dir is None:
        return None
    kept = Path(state_dir) / NAME_FILE
    if kept.is_symlink() or kept.exists() and not kept.is_file():
        raise InvalidArgument(f"{kept} is not a file the controller made (a folder, a link or a special file): move it"
                              " out of the state folder (the controller makes its own)", field="state_dir")
    spool = _read(kept)
    if spool is None and os.path.isdir(_before(state_dir)):  # a state folder from before names were drawn
        spool = _before(state_dir)
    return spool if found_own(spool) else None


def _read(kept: Path) -> str | None:
    """The spool the state folder names; None if none, or if what is there is not a spool's name (damaged)."""
    try:
        spool = kept.read_text().strip()
    except (OSError, UnicodeDecodeError):  # (not a file: spool_for refuses it, naming it)
        return None
    folder, name = os.path.split(spool)
    return spool if folder == tempfile.gettempdir() and _NAME.fullmatch(name) else None


def _before(state_dir: Path) -> str:
    """The spool a controller named from its state folder's path before names were drawn: one a restart after an
    upgrade takes on, if it is its own, for what supervisors left there."""
    digest = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"vipu-spool-{digest}")


def tidy(spool: str, wanted: Callable[[int, int], bool]) -> bool:
    """At a clean stop: remove what nothing needs any more from the controller's own spool, then the folder if that
    left it empty. A run's files are needed while its supervisor holds its lock (its program still ends: a restart
    waits for it, run_locks.py); its exit record while `wanted(job_id, run)` (its end is not in the store yet: a
    restart reads it, run_exits.py). A file no supervisor names so stays, and the folder with it. Returns whether the
    folder is gone."""
    if not found_own(spool):
        return not os.path.lexists(spool)
    for path in Path(spool).iterdir():
        found = _RUN_FILE.fullmatch(path.name)
        if found is None:
            continue
        job_id, run, kind = int(found[1]), int(found[2]), found[3]
        if holder(lock_path(spool, job_id, run)) is None and not (kind == "exit" and wanted(job_id, run)):
            path.unlink(missing_ok=True)
    try:
        os.rmdir(spool)
    except OSError:
        return False
    return True


def discard(state_dir: Path) -> bool:
    """The state folder is thrown away (a test's, a demo's): no restart will read what its controller's supervisors
    left, so its spool goes (its own only: kept_spool), but for the files of a supervisor still alive (tidy).
    Returns whether none of its own is left."""
    spool = kept_spool(state_dir)
    return spool is None or tidy(spool, lambda job_id, run: False)


def found_own(spool: str | None) -> bool:
    """Whether `spool` is there and a folder of this user's own (is_own, but not missing): what its supervisors left
    there may be read. Why both: anyone may make a folder of a spool's name in /tmp."""
    return bool(spool) and os.path.isdir(spool) and is_own(spool)


def is_own(spool: str) -> bool:
    """Whether `spool` is missing or a folder of this user's that no one else may write in (stepd.own_spool's test)."""
    try:
        info = os.lstat(spool)
    except FileNotFoundError:
        return True
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022
