"""Which Unix account a user's program runs as: never one with more privilege than the user has.

Under --secure each vipu user's programs run as the Unix account an admin mapped to them (`vipu-admin create user
NAME --unix-user ACCOUNT`, or `vipu-admin update user NAME --unix-user ACCOUNT`), with its uid, gid and groups, as slurmd runs a job as its submitter; only a controller
running as root can switch to it. Without a mapping, or on a controller that is not root, programs are refused at
submit with how to allow them. Without --secure (one person on a laptop) programs run as the controller's user.
"""

from __future__ import annotations

import os
import pwd

from vipu.errors import InvalidArgument, PermissionDenied


def unix_account(user: str, unix_user: str | None) -> dict:
    """{name, uid, gid, groups} of the account `user`'s programs run as; PermissionDenied saying how to allow them."""
    if not unix_user:
        raise PermissionDenied(
            f"user {user} has no Unix account to run programs as, and a --secure controller runs programs only as"
            f" their user's account: an admin maps one (vipu-admin update user {user} --unix-user ACCOUNT)")
    if os.geteuid() != 0:
        raise PermissionDenied(
            "this --secure controller does not run as root, so it cannot run a program as its user's Unix account;"
            " run vipu-server as root (as slurmd runs), or without --secure on a machine of your own")
    entry = account(unix_user)
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid,
            "groups": os.getgrouplist(entry.pw_name, entry.pw_gid)}


def uid_of(account_name: str | None) -> int | None:
    """The uid of the Unix account of that name on this machine, as sacct --use-local-uid looks one up; None for
    none."""
    try:
        return pwd.getpwnam(account_name).pw_uid if account_name else None
    except KeyError:
        return None


def account(unix_user: str) -> pwd.struct_passwd:
    """The Unix account, if programs may run as it: InvalidArgument for one that does not exist, root, or one in
    root's group (gid 0: files root's group may write, such as parts of /var or /etc on some systems, would be the
    program's to change)."""
    try:
        entry = pwd.getpwnam(unix_user)
    except KeyError:
        raise InvalidArgument(f"unix_user {unix_user!r} is not an account on this machine; give one of"
                              " /etc/passwd's (e.g. created with useradd)") from None
    if entry.pw_uid == 0:
        raise InvalidArgument(f"unix_user {unix_user} is root, and a program never runs as root under --secure;"
                              " give an unprivileged account")
    if 0 in (entry.pw_gid, *os.getgrouplist(entry.pw_name, entry.pw_gid)):
        raise InvalidArgument(f"unix_user {unix_user} is in root's group (gid 0), and a program never runs with root's"
                              " group under --secure; give an account outside it (or take it out: gpasswd -d"
                              f" {unix_user} root, or a primary group of its own)")
    return entry
