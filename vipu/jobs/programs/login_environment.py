"""What a program gets of its user's login when --export did not pass it on (NONE, or a list of variables): HOME,
SHELL, USER, LOGNAME and PATH, as login(1) sets them, from the passwd entry of the account it runs as, on the node
where it runs.

Why: sbatch's --export=NONE and --export=VAR load the user's environment on that node as --get-user-env does (sbatch's
man page), and a script that finds no HOME writes its files to the wrong place or fails. Why not all of
--get-user-env, which runs the user's login shell (`su - USER -c env`) and keeps what it prints: that runs the user's
dotfiles, as root, with a timeout, for every job; what login sets needs none of it. What --export passed on is kept.
"""

from __future__ import annotations

import pwd

LOGIN_DEFS = "/etc/login.defs"
FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"  # login's own when login.defs names none


def with_login(env: dict[str, str], uid: int, login_defs: str = LOGIN_DEFS) -> dict[str, str]:
    """`env` with what it lacks of the login environment of `uid`: HOME, SHELL, USER and LOGNAME from its passwd
    entry (none of them if it has none), and PATH as login sets it (login_path)."""
    login = {"PATH": login_path(uid, login_defs)}
    try:
        entry = pwd.getpwuid(uid)
        login.update(HOME=entry.pw_dir, SHELL=entry.pw_shell or "/bin/sh", USER=entry.pw_name,
                     LOGNAME=entry.pw_name)
    except KeyError:  # an account with no passwd entry (a container's): nothing to read
        pass
    return {**login, **env}


def login_path(uid: int, login_defs: str = LOGIN_DEFS) -> str:
    """The PATH login(1) gives `uid`: login.defs's `ENV_PATH PATH=...` (ENV_SUPATH for root), else FALLBACK_PATH."""
    key = "ENV_SUPATH" if uid == 0 else "ENV_PATH"
    try:
        with open(login_defs) as f:
            for line in f:
                words = line.split()
                if len(words) == 2 and words[0] == key:
                    return words[1].removeprefix("PATH=")
    except OSError:
        pass
    return FALLBACK_PATH
