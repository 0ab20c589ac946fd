"""Where a controller's program scripts, run locks and exit records wait, on every node: a folder in the system's
temporary one, which every job's user may pass through (the controller's state folder may be closed to them).

Why its name is random and kept in the state folder: a name worked out from the state folder's path let any local
user make that folder first, in a fresh /tmp, and stop every program from starting (a supervisor refuses a spool that
is not its own, stepd.own_spool). A random name is the controller's alone until the folder exists, and the
controller makes it as it starts; a restart reads the name back, to find what its supervisors left there. A folder
of that name that is not the controller's (made by another user while /tmp was cleaned) gets a new name drawn.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

from vipu.errors import InvalidArgument

NAME_FILE = "spool"  # in the state folder: the spool's path
_NAME = re.compile(r"vipu-spool-[0-9a-f]{12}([0-9a-f]{4})?")  # (12: named from the state folder's path, before)


def spool_for(state_dir: Path | None) -> str:
    """The controller's spool folder, made if missing: the one its state folder names if that is still its own,
    else a new one (named there). Without a state folder (nothing to find again) a new one each time."""
    kept = Path(state_dir) / NAME_FILE if state_dir is not None else None
    if kept is not None and (kept.is_symlink() or kept.exists() and not kept.is_file()):
        raise InvalidArgument(f"{kept} is not a file the controller made (a folder, a link or a special file): move it"
                              " out of the state folder (the controller makes its own)", field="state_dir")
    spool = _read(kept) if kept is not None else None
    if spool is None and kept is not None and os.path.isdir(_before(state_dir)):  # a state folder from before
        spool = _before(state_dir)
    while True:
        if spool is None or not is_own(spool):
            spool = os.path.join(tempfile.gettempdir(), f"vipu-spool-{secrets.token_hex(8)}")
        try:
            os.mkdir(spool, 0o711)
        except FileExistsError:
            if not is_own(spool):  # made by another user between the look and the mkdir: a name of its own
                spool = None
                continue
        break
    if kept is not None:  # (written each time: a file an earlier version left readable is made 0600, as state files)
        partial = kept.with_name(NAME_FILE + ".new")
        partial.unlink(missing_ok=True)
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:  # (a state file)
            f.write(spool + "\n")
        os.replace(partial, kept)
    return spool


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


def is_own(spool: str) -> bool:
    """Whether `spool` is missing or a folder of this user's that no one else may write in (stepd.own_spool's test)."""
    try:
        info = os.lstat(spool)
    except FileNotFoundError:
        return True
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022
