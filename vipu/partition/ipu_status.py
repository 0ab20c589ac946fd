"""Each IPU's state (idle, allocated, draining, drained, failed) and the partition that holds it, as `vipu list
ipus`, `vipu top` and the metrics show them."""

from __future__ import annotations

from dataclasses import dataclass

from vipu.partition.pod_state import PodState


@dataclass(frozen=True)
class IpuStatus:
    ipu: int
    machine: int
    index: int
    ild: int
    agent: str | None
    # idle | allocated | draining (its agent is drained or missing, a partition holds it) | drained (the same, in no
    # partition) | failed
    state: str
    partition: str | None

    @property
    def working(self) -> bool:
        """Whether the IPU may be doing work: in a partition and not failed. Its machine keeps reporting the last
        step it ran after the job has ended, so telemetry reads an IPU that is not working as idle."""
        return self.partition is not None and self.state != "failed"



def ipu_statuses(state: PodState) -> list[IpuStatus]:
    """Each IPU's state and the partition holding it."""
    owner = {ipu: p.name for p in state.partitions.values() for ipu in p.ipus}
    agents = state.agent_of_machine()
    failed = state.failed_ipus
    drained, draining = state.drained_mask, state.draining_mask
    statuses = []
    for ipu in range(state.pod.ipus):
        place_ = state.topology.place(ipu)
        agent = agents.get(place_.machine)
        # draining before allocated: a job still running on a drained agent's IPUs must show the drain (Slurm's
        # drng), and in a state of its own, so what counts IPUs in use can add it (it holds a job) and what
        # counts drained ones is not told about the work
        kind = ("failed" if ipu in failed else "draining" if draining >> ipu & 1
                else "drained" if drained >> ipu & 1 else "allocated" if ipu in owner else "idle")
        statuses.append(
            IpuStatus(ipu, place_.machine, place_.index, place_.ild, agent.name if agent else None, kind, owner.get(ipu))
        )
    return statuses
