"""Which Unix accounts a --secure controller runs programs as (accounts.py): never root, nor root's group."""

from __future__ import annotations

import pwd

import pytest

from vipu.control import accounts
from vipu.errors import InvalidArgument


def _entry(name: str, uid: int, gid: int) -> pwd.struct_passwd:
    return pwd.struct_passwd((name, "x", uid, gid, "", f"/home/{name}", "/bin/sh"))


@pytest.mark.parametrize("gid, groups", [(0, [0]), (1000, [1000, 0])])
def test_an_account_in_roots_group_is_refused_naming_the_fix(monkeypatch, gid, groups):
    """walk37: an account whose primary group is root was accepted, though uid 0 aliases are refused."""
    monkeypatch.setattr(accounts.pwd, "getpwnam", lambda name: _entry(name, 1000, gid))
    monkeypatch.setattr(accounts.os, "getgrouplist", lambda name, g: groups)
    with pytest.raises(InvalidArgument, match="unix_user op is in root's group \\(gid 0\\).*gpasswd -d op root"):
        accounts.account("op")


def test_an_unprivileged_account_is_taken(monkeypatch):
    monkeypatch.setattr(accounts.pwd, "getpwnam", lambda name: _entry(name, 1000, 1000))
    monkeypatch.setattr(accounts.os, "getgrouplist", lambda name, g: [1000, 27])
    assert accounts.account("op").pw_uid == 1000
