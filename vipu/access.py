"""Who may see and change what. Without --secure everyone is trusted (as V-IPU without --secure); with it, a user
sees and changes only their own jobs and partitions, and admins see everything."""

from __future__ import annotations

from dataclasses import dataclass

from vipu.errors import PermissionDenied


@dataclass(frozen=True)
class Identity:
    name: str
    admin: bool

    def sees(self, owner: str) -> bool:
        return self.admin or owner == self.name

    def sees_partition(self, owner: str, allocation_users: list[str]) -> bool:
        """A partition is its owner's and admins'; users granted its allocation see it too (V-IPU)."""
        return self.sees(owner) or self.name in allocation_users

    def check_owner(self, kind: str, name: str, owner: str) -> None:
        if not self.sees(owner):
            raise PermissionDenied(
                f"{kind} {name} belongs to {owner or 'nobody'}, not {self.name}; only its owner or an admin may do that",
                reason="NOT_OWNER", resource=(kind, name))


    def check_allocation(self, name: str, users: list[str]) -> None:
        """An allocation that names users is granted to them (and admins); one that names none is open to all."""
        if users and not self.admin and self.name not in users:
            raise PermissionDenied(
                f"allocation {name} is granted to {', '.join(users)}, not {self.name}; use your own allocation"
                " (`vipu list allocations`) or ask an admin to grant you this one",
                reason="ALLOCATION_NOT_GRANTED", resource=("allocation", name))


ANYONE = Identity("", admin=True)  # an insecure controller trusts every caller
