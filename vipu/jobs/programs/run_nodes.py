"""Which Ray node supervises a program's run, and what a restarted controller reads on that node.

Why the node goes into the store before its supervisor starts (ProgramRecord.node, node_address, spool): the
supervisor writes its program's end (run_exits.py) and holds its lock (run_locks.py) in the spool on its own node. A
controller killed meanwhile (kill -9) knows nothing after its restart but the store, and its own machine may never
have had that spool (no run of its was there), so its own reads found nothing: the run ended at the restart, its
exit code unknown, the outage counted as run time. So the restart recovers its jobs once Ray is connected
(control/queue_rebuild.recover_stored) and asks the run's node, in the folder the run used; and while the run's
supervisor still holds its lock there (its program in KillWait), it keeps the run's partition, asking that node
every NODE_POLL_S whether it has let go.

A run whose node has left the Ray cluster (its host failed, or the cluster was started again) cannot say how it
ended: it ends at the restart, NODE_FAIL as a Slurm job whose node failed, and its record says why (`ended`, shown by
`vipu show job` as Ended=).
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import Callable

from vipu.jobs.programs.hosts import NodeSteps
from vipu.jobs.programs.program_record import ProgramRecord
from vipu.jobs.programs.run_locks import when_gone

log = logging.getLogger("vipu.programs")
ASK_WAIT_S = 60.0  # for a node's actor to answer (its first call waits for a worker process to start there)
NODE_POLL_S = 0.5  # how often a node is asked whether the locks of its runs from before a restart are free yet


class RunNodes:
    """The NodeSteps actor of each Ray node this controller's runs used, made on first use."""

    def __init__(self) -> None:
        self._actors: dict[str, object] = {}  # Ray node id -> its NodeSteps actor
        self._lock = threading.Lock()

    def host(self, fleet, machines: list[int]) -> tuple[object, str, str]:
        """The actor of the node of the job's first machine, that node's id and its address."""
        import ray

        pool = fleet.actors_for(machines[:1])
        node = ray.get(pool.actor(machines[0]).health.remote(), timeout=ASK_WAIT_S)["node"]
        return self.steps(node), node, live_nodes().get(node, "")

    def steps(self, node: str):
        """The NodeSteps actor on `node` (a live node's id), made if there is none."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        with self._lock:
            actor = self._actors.get(node)
            if actor is None:
                actor = self._actors[node] = ray.remote(NodeSteps).options(
                    num_cpus=0, max_concurrency=1000,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
        return actor

    def all(self) -> list:
        with self._lock:
            return list(self._actors.values())

    def recorded_exit(self, record: ProgramRecord, job_id: int) -> dict | None:
        """What the supervisor of the run `record` names recorded of its program's end on its node
        ({"exit_code", "signal", "at"}), or None: it recorded none, or its node is gone or did not answer (then
        `record.ended` says so, for the caller to store)."""
        import ray

        address = f"{record.node_address or 'address unknown'}, Ray node {record.node}"
        if record.node not in live_nodes():
            record.ended = (f"its Ray node ({address}) has left the Ray cluster, and with it the record of how its"
                            " program ended")
            log.warning("job %s: run %s: %s", job_id, record.run, record.ended)
            return None
        try:
            return ray.get(self.steps(record.node).recorded_exit.remote(record.spool, job_id, record.run),
                           timeout=ASK_WAIT_S)
        except Exception as e:  # noqa: BLE001 - a node going as it is asked: as if gone
            record.ended = (f"its Ray node ({address}) did not say how its program ended: {type(e).__name__}:"
                            f" {str(e).splitlines()[0] if str(e) else ''}")
            log.warning("job %s: run %s: %s", job_id, record.run, record.ended)
            return None

    def left_running(self, record: ProgramRecord | None, job_id: int) -> tuple[dict, Callable]:
        """The job's runs whose supervisors still hold their locks on the node of its run `record` (lock -> pid), and
        the run_locks.when_gone that watches them there; none when the record names no node or its node is gone (its
        processes went with it)."""
        import ray

        if record is None or not record.node or record.node not in live_nodes():
            return {}, when_gone
        actor = self.steps(record.node)

        def holding(paths: list) -> list:
            try:
                return ray.get(actor.held.remote(paths), timeout=ASK_WAIT_S)
            except Exception as e:  # noqa: BLE001 - its node went meanwhile, and its processes with it
                log.warning("job %s: the node of its run from before the restart (%s) did not answer (%s): its"
                            " partition is let go", job_id, record.node_address or record.node, type(e).__name__)
                return []

        try:
            left = ray.get(actor.left_running.remote(record.spool, job_id), timeout=ASK_WAIT_S)
        except Exception as e:  # noqa: BLE001 - as above
            log.warning("job %s: the node of its run from before the restart (%s) did not say whether its program"
                        " still runs (%s): its partition is let go", job_id, record.node_address or record.node,
                        type(e).__name__)
            return {}, when_gone
        return left, partial(when_gone, holding=holding, poll_s=NODE_POLL_S)


def live_nodes() -> dict[str, str]:
    """The Ray cluster's live nodes: id -> address (one call to its GCS)."""
    import ray

    return {n["NodeID"]: n.get("NodeManagerAddress", "") for n in ray.nodes() if n.get("Alive")}
