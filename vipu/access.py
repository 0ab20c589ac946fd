"""Who may see and change what. Without --secure everyone is trusted (as V-IPU without --secure); with it, a user
sees and changes only their own jobs and partitions, and admins see everything.

Why a partition made by hand needs a grant by name: it holds its IPUs outside any job, with no time limit, no
fair-share charge and no cap, as only an operator's reservation does in Slurm. So under --secure a user makes one
only in an allocation an admin granted them (V-IPU: admins grant allocations to users, users carve partitions in
them); an allocation granted to no one, the built-in `default` among them, serves jobs and admins."""

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

    def check_partition_allocation(self, name: str, users: list[str], agents: list[str], default: bool) -> None:
        """A partition by hand needs an allocation that names the caller, or admin rights (the module's why)."""
        self.check_allocation(name, users)
        if self.admin or self.name in users:
            return
        if default:
            grant = f"`vipu-admin create allocation NAME --agents AGENTS --users {self.name}`, AGENTS from"\
                    " `vipu list allocations`' default row"
        else:
            grant = f"`vipu-admin remove allocation {name}` then `vipu-admin create allocation {name} --agents"\
                    f" {','.join(agents)} --users {self.name}`"
        raise PermissionDenied(
            f"allocation {name} is granted to no user, so under --secure it serves jobs and admins only: a partition"
            f" made by hand, which holds its IPUs outside any job, needs an allocation granted to {self.name};"
            f" an admin grants one with {grant}; or run your work as a job (`vipu submit --ipus N`), which gets a"
            " partition of its own", reason="ALLOCATION_NOT_GRANTED", resource=("allocation", name))


ANYONE = Identity("", admin=True)  # an insecure controller trusts every caller
