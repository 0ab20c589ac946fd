"""A partition: the request that asks for one, the record the controller keeps, and its state history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from vipu.errors import InvalidArgument
from vipu.partition.partition_states import PartitionState, check_transition

ILD_ROUTING = "RINGSWNC"  # V-IPU's default IPU-Link domain routing (vipu list partitions: ILD Routing)
GW_ROUTING = "DEFAULT"


class PartitionRequest(BaseModel):
    """What `vipu create partition` sends; rules.py checks it against the Pod."""

    model_config = ConfigDict(extra="forbid")

    name: str
    size: int
    num_gcds: int = 1
    gcd_sync_replicas: int | None = None
    reconfigurable: bool = False
    allocation: str | None = Field(default=None, description="the allocation to carve from; default: 'default'")
    owner: str = ""
    holder: str | None = Field(
        default=None, description="created in use by this holder (job <id> for a job's partition slurm_<id>)")
    first_ipu: int | None = Field(default=None, description="the block the scheduler chose; default: placement picks")


class Transition(BaseModel):
    state: PartitionState
    at: float


class Partition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    size: int
    num_gcds: int
    gcd_sync_replicas: int | None
    reconfigurable: bool
    allocation: str
    cluster: str
    owner: str
    first_ipu: int
    state: PartitionState
    holder: str | None = None
    created_at: float
    history: list[Transition]

    @property
    def ipus(self) -> range:
        return range(self.first_ipu, self.first_ipu + self.size)

    @property
    def sync_type(self) -> str:
        # V-IPU: --reconfigurable partitions sync as c2-compatible, others pod-native-default.
        return "c2-compatible" if self.reconfigurable else "pod-native-default"

    @property
    def ipus_per_gcd(self) -> int:
        return self.size // self.num_gcds

    def gcd_ipus(self, gcd: int) -> range:
        if not 0 <= gcd < self.num_gcds:
            raise InvalidArgument(f"gcd is {gcd}; partition {self.name} has GCDs 0 to {self.num_gcds - 1}")
        first = self.first_ipu + gcd * self.ipus_per_gcd
        return range(first, first + self.ipus_per_gcd)

    def moved_to(self, state: PartitionState, now: float) -> Partition:
        """A copy in `state`, with the transition recorded; the table in partition_states.py says which moves are legal."""
        check_transition(self.name, self.state, state)
        return self.model_copy(update={"state": state, "history": [*self.history, Transition(state=state, at=now)]})
