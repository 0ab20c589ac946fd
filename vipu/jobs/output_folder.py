"""The rules for a job's output and error files, for every workload kind.

sbatch's rule: their directory must exist. Slurm fails the job rather than make the directory (a typo in --output
would otherwise scatter directories), and so does every workload kind here: a program's supervisor when it opens
the file, the controller at the start of a built-in workload's run. Where the controller opens the file as its own
user and the submit already knows the folder (no %-pattern in it), the submit is refused instead
(vipu/control/output_files.py check_submit): the run could only fail. Not under --secure for a program, whose
user's account opens its files: the controller's view of a folder is not its user's, and telling a user whether
a folder they cannot see exists would show them another's files.

This controller's rule, where a file is opened as the controller's own OS user (every built-in workload's, and a
program's without --secure): only under the folders allowed, and never over an existing file the controller did
not write for that job (a root-owned file was overwritten). Why a program's too: without it, `vipu submit --wrap
CMD -o FILE` truncated any file the controller's user may write. Under --secure a program opens its files as its
user's Unix account, whose own permissions decide.

But as sbatch, a rerun with the same -o truncates the file the user's earlier job wrote: a file this controller made
(a program's or a built-in's) carries an extended attribute naming the controller (its state folder) and the job's
user, and a later job of that user may write over it; another user's job, or a file without it, stays refused.
Why an attribute, not the store's records of earlier runs: it goes with the file, so a file removed and made again
at the same path (even on the same inode) is not taken for the one the controller made; only who may write the file
may set it, and the controller's user owns it. Where a filesystem keeps no such attributes, the rule is the old one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable, Iterable

JOB_OUTPUT = "job-output"  # the state folder's folder for job output, always allowed
WRITER = "user.vipu-sim.writer"  # the extended attribute on a file the controller made: itself and the job's user


class OutputRefused(Exception):
    """A run's output or error file may not be written; the message names it and the fix."""


def missing_folder(what: str, path: str, flag: bool = True) -> str | None:
    """Why the `what` ("output", "error") file `path` cannot be made, if its directory is missing; else None."""
    folder = os.path.dirname(path) or "."
    try:
        if stat.S_ISDIR(os.stat(folder).st_mode):
            return None
    except PermissionError:  # a folder above it may not be searched: whether it exists is not this user's to know
        return (f"{what} file {path}: its directory {folder} cannot be reached (permission denied); give"
                f" {_flag(what, flag)}a path in a directory the job's user may write in")
    except OSError:
        pass
    return (f"{what} file {path}: its directory {folder} does not exist; create it, or give {_flag(what, flag)}a path"
            " in an existing directory (as sbatch, vipu never makes it)")


def missing_workdir(workdir: str, flag: bool = True) -> str | None:
    """Why a program cannot start in `workdir`, if it is missing: the cause, not its output file's missing folder
    (walk28); else None."""
    if os.path.isdir(workdir):
        return None
    if not flag:  # the API's refusal: its field first, which the CLI names by its flag or script line
        return f"workload.chdir {workdir} does not exist; create it, or give a working directory that exists"
    return f"the working directory {workdir} does not exist; give --chdir a directory that does, or create it"


def allowed_folders(submit_dir: str | None, state_dir: Path | None, output_dirs: Iterable[Path]) -> list[Path]:
    """Where a job's files may go: the operator's --output-dir folders, else where `vipu submit` ran; and the state
    folder's job-output folder, unless it is a symlink (the start refuses one; this is for one made since). Why
    looked at each time: the check resolves the allowed folders' links, so a linked job-output made its target an
    allowed folder, wherever it pointed."""
    dirs = list(output_dirs) or ([Path(submit_dir)] if submit_dir else [])
    own = state_dir / JOB_OUTPUT if state_dir is not None else None
    return dirs + ([own] if own is not None and not os.path.islink(own) else [])


def outside_folders(what: str, path: str, dirs: Iterable[Path], flag: bool = True) -> str | None:
    """Why `path` may not be written, if its folder (symlinks resolved) is under none of `dirs`; else None."""
    dirs = list(dict.fromkeys(dirs))  # (a program's working folder is often the submit folder again)
    folder = Path(os.path.realpath(os.path.dirname(path)))
    if any(folder == d or d in folder.parents for d in (Path(os.path.realpath(d)) for d in dirs)):
        return None
    return (f"{what} file {path} is outside the folders this controller writes job output into"
            f" ({', '.join(map(str, dirs)) or 'none'}): give {_flag(what, flag)}a path under one of them (a relative"
            f" path is under where vipu submit runs), or ask the operator for {_OPERATOR[flag]}")


_OPERATOR = {True: "a vipu-server --output-dir", False: "another output folder (vipu-server's output-dir option)"}


def _flag(what: str, flag: bool) -> str:
    """The flag a message names before its fix, where it is a job's reason; a refusal of the API names no flag
    (the API speaks its fields, which the CLI names by their flags)."""
    return f"--{what} " if flag else ""


def writer_mark(state_dir: Path | None, user: str) -> str:
    """What WRITER says of a file this controller made for one of `user`'s jobs, a program's or a built-in's (a
    controller with no state folder: its process, as it has no other name)."""
    controller = os.path.realpath(state_dir) if state_dir is not None else f"pid {os.getpid()}"
    return f"{controller}\0{user}"


def mark_writer(fd: int, mark: str) -> None:
    """Put WRITER on a file just made; a filesystem without user attributes leaves it unmarked (not rewritable)."""
    try:
        os.setxattr(fd, WRITER, mark.encode())
    except OSError:
        pass


def marked_for(path: Path, mark: str) -> bool:
    """Whether `path` (not a link) carries `mark`: this controller made it for one of that user's jobs."""
    try:
        return os.getxattr(path, WRITER, follow_symlinks=False) == mark.encode()
    except OSError:
        return False


def not_ours(what: str, path: Path, job: str, ours: Callable[[Path], bool]) -> str | None:
    """Why an existing `path` may not be written over (None if there is no such file, or `ours` says the controller
    wrote it for `job`, a job's display id): not a plain file, another user's, or not written for that job."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    why = None
    if not os.path.isfile(path) or os.path.islink(path):
        why = "is not a plain file"
    elif st.st_uid != os.geteuid():
        why = "belongs to another user"
    else:
        try:
            if not ours(path):
                why = f"was not written by this controller for job {job} or an earlier job of its user"
        except OSError as e:
            why = f"cannot be read ({e.strerror})"
    if why is None:
        return None
    return (f"{what} file {path} exists and {why}; the controller writes over no file it did not write for this"
            f" job or its user's earlier ones: remove it, or give --{what} a new file")


def fresh_files(files: dict[str, str], dirs: Iterable[Path], job: str, earlier: Iterable[str],
                append: bool = False, mark: str | None = None) -> list[str]:
    """A program's files opened as the controller's user: `files` maps "output"/"error" to a path. OutputRefused
    names the first that may not be written; else the paths its supervisor must make new (it opens them O_EXCL, so
    one made meanwhile is not written over): all but those of `earlier`, the files the job's previous run made.
    `append` (sbatch --open-mode=append): a plain file of the controller's user is added to, whoever made it, as
    nothing in it is lost. `mark` (writer_mark): a file carrying it was made for an earlier job of the same user, and
    is written over as sbatch's rerun writes over its own."""
    earlier = set(earlier)
    new = []
    for what, path in files.items():
        if path == os.devnull:  # sbatch's -o /dev/null: nothing is kept, and nothing is harmed
            continue
        why = (missing_folder(what, path) or outside_folders(what, path, dirs)
               or not_ours(what, Path(path), job,
                           lambda p: append or str(p) in earlier or (mark is not None and marked_for(p, mark))))
        if why:
            raise OutputRefused(why)
        if not os.path.lexists(path):
            new.append(path)
    return new
