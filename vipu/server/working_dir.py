"""The folder a --secure controller starts in: one no other user may write.

Why it matters: Ray puts the driver's working directory on every worker's sys.path (ray/_private/worker.py,
`code_paths.append(current_directory)`), ahead of the standard library, and the workers run as the controller's user
(root, when programs run as their users). A `json.py` a user left in that folder would run with the controller's
rights in every machine actor. The programs' supervisors and the local Ray's reaper are started with `-P` from "/"
(hosts.py, local_ray.py); Ray's workers can only be given a safe folder to start from. Only this host's folder is
looked at: a Ray cluster's other nodes put the same path on their workers' sys.path, as it is on their own host.
"""

from __future__ import annotations

import os
import stat


def working_dir_problem() -> str | None:
    """Why this process's working directory is no safe one to start Ray from (writable_by_others), or None."""
    try:
        cwd = os.getcwd()
        problem = writable_by_others(cwd)
        return problem and f"it starts in {cwd}, and {problem}"
    except OSError as e:  # removed since it was entered, or a folder above it may no longer be looked at
        return f"its working directory cannot be looked at ({e.strerror})"


def writable_by_others(folder: str) -> str | None:
    """Why another user could put a file in `folder` (or swap it, through a folder above it), or None. A folder above
    it may be writable by all if it is sticky (/tmp): no one else may then rename what is not theirs."""
    own = (0, os.geteuid())
    path = os.path.realpath(folder)
    below = None
    while True:
        st = os.stat(path)
        shared = st.st_mode & (stat.S_IWOTH | (stat.S_IWGRP if st.st_gid not in (0, os.getegid()) else 0))
        if st.st_uid not in own:
            return f"{path} belongs to another user (uid {st.st_uid})"
        if shared and (below is None or not st.st_mode & stat.S_ISVTX):
            who = "every user" if st.st_mode & stat.S_IWOTH else f"group {st.st_gid}"
            return f"{path} may be written by {who}"
        if path == "/":
            return None
        below, path = path, os.path.dirname(path)
