"""A job's file opened by the job's account, not the controller's: the kernel checks that account's permissions
along the whole path. Why: a job's user may swap a folder of its output path for a symlink (to /etc, say) while
its run goes on, and a descriptor opened as root through it would read or write a file the user may not."""

from __future__ import annotations

import errno
import os
import signal
import socket


ANSWER_S = 10.0  # what a child may take to open a file; more is a child stopped (or an open that waits)


def open_as(path: str, user: dict | None, flags: int, answer_s: float = ANSWER_S) -> int:
    """`path` opened with `flags` by the controller's user, or (`user` ({uid, gid, groups}) given) by that account:
    a child process becomes it, opens the file and hands the descriptor back. A fork without exec: the child makes
    system calls only, then ends. A child that has not answered within `answer_s` is killed and the open fails
    (ETIMEDOUT): running as that account, it may be stopped by the account's own processes (kill -STOP -1), and the
    caller (an RPC's thread, a supervisor stopping its job) must not wait on it (walk44)."""
    if user is None or user["uid"] == os.geteuid():
        return os.open(path, flags)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(answer_s)
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
        try:
            message, fds, _, _ = socket.recv_fds(ours, 32, 1)
        except TimeoutError:
            message, fds = str(errno.ETIMEDOUT).encode(), []
        finally:
            os.kill(pid, signal.SIGKILL)  # done or stuck: a stopped child would hold waitpid too
            os.waitpid(pid, 0)
    if fds:
        return fds[0]
    code = int(message or b"0") or errno.EACCES  # (nothing said: the child died before it could)
    if code == errno.ETIMEDOUT:  # strerror's "Connection timed out" would send `vipu logs`' reader to the network
        raise OSError(code, f"the open as its user did not answer in {answer_s:g} s")
    raise FileNotFoundError(code, os.strerror(code)) if code == errno.ENOENT else OSError(code, os.strerror(code))
