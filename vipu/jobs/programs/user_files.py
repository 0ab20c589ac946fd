"""A job's file opened by the job's account, not the controller's: the kernel checks that account's permissions
along the whole path. Why: a job's user may swap a folder of its output path for a symlink (to /etc, say) while
its run goes on, and a descriptor opened as root through it would read or write a file the user may not."""

from __future__ import annotations

import errno
import os
import socket


def open_as(path: str, user: dict | None, flags: int) -> int:
    """`path` opened with `flags` by the controller's user, or (`user` ({uid, gid, groups}) given) by that account:
    a child process becomes it, opens the file and hands the descriptor back. A fork without exec: the child makes
    system calls only, then ends."""
    if user is None or user["uid"] == os.geteuid():
        return os.open(path, flags)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        pid = os.fork()
        if pid == 0:  # the child: nothing here may return
            try:
                os.setgroups(user["groups"])
                os.setgid(user["gid"])
                os.setuid(user["uid"])
                socket.send_fds(theirs, [b"ok"], [os.open(path, flags)])
            except OSError as e:
                theirs.sendall(str(e.errno or 0).encode())
            finally:
                os._exit(0)
        theirs.close()
        message, fds, _, _ = socket.recv_fds(ours, 32, 1)
        os.waitpid(pid, 0)
    if fds:
        return fds[0]
    code = int(message or b"0") or errno.EACCES  # (nothing said: the child died before it could)
    raise FileNotFoundError(code, os.strerror(code)) if code == errno.ENOENT else OSError(code, os.strerror(code))
