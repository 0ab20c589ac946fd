"""The objects an administrator manages: agents (one per IPU-Machine), clusters, allocations and users."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from vipu.hardware.pod import ClusterTopology

DEFAULT_ALLOCATION = "default"  # derived, never stored: every agent that no named allocation holds
DEFAULT_HOLDS = "the agents no named allocation holds"  # how a refusal says what the default allocation is
DEFAULT_CLUSTER = "cluster0"  # created at first start: every agent of the Pod


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    created_at: float


AgentState = Literal["ONLINE", "DRAINED"]  # as stored: whether an admin drained it (agent_states.py says more)
AGENT_STATES = get_args(AgentState)
CLUSTER_TOPOLOGIES = get_args(ClusterTopology)


AGENT_HOST = "127.0.0.1"  # where the emulated agents are; also an agent's host when it is created without one
AGENT_PORT = 8080  # an agent's port when it is created without one


class Reason(BaseModel):
    """Why an admin took an agent or an IPU out of service, who did, and when: Slurm's node Reason= with the user
    and time `sinfo -R` lists beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    user: str  # the caller's user name; "controller" for the controller's own (a machine's actor lost)
    at: float  # the controller's clock, as created_at


class Agent(Record):
    """The V-IPU agent of one IPU-Machine (machine index into the Pod config)."""

    host: str
    port: int
    machine: int
    state: AgentState = "ONLINE"
    reason: Reason | None = None  # why it is drained; None when online (or drained before reasons were kept)


class Cluster(Record):
    agents: list[str]
    num_ilds: int
    topology: Literal["torus", "mesh"]
    cluster_topology: ClusterTopology


class Allocation(Record):
    agents: list[str]
    users: list[str] = []


class User(Record):
    admin: bool = False
    key_sha256: str  # the access key is shown once at creation; only its hash is kept
    unix_user: str | None = None  # the Unix account the user's programs run as under --secure (accounts.py)


class IpuFailure(Record):
    """A failed IPU (its name is the IPU number), kept so a restart still knows the IPU is out of service."""

    ipu: int
    reason: Reason | None = None  # None: failed before reasons were kept
