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
from vipu.jobs.programs.run_exits import exit_path
from vipu.jobs.programs.run_locks import when_gone
from vipu.scheduler.workload import RunExit

log = logging.getLogger("vipu.programs")
ASK_WAIT_S = 60.0  # for a node's actor to answer (its first call waits for a worker process to start there)
NODE_POLL_S = 0.5  # how often a node is asked whether the locks of its runs from before a restart are free yet


class RunNodes:
    """The NodeSteps actor of each Ray node this controller's runs used, made on first use."""

    def __init__(self) -> None:
        self._actors: dict[str, object] = {}  # Ray node id -> its NodeSteps actor
        self._exits: dict[tuple[int, int], tuple[dict | None, str | None]] = {}  # (job id, run) -> its end, or why
        # none: its node's answer to ask(), until recorded_end reads it
        self._left: dict[int, dict[str, int]] = {}  # job id -> its runs' locks still held (lock -> pid), as ask()'s
        self._read: dict[int, tuple[str, str]] = {}  # job id -> (node, exit record) recorded_end read, until forget
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

    def ask(self, jobs, record_of: Callable[[int], ProgramRecord | None], left: bool = True,
            connected: bool = True) -> None:
        """Ask the nodes of the jobs' latest runs (their records: `record_of(job id)`) what their supervisors recorded
        of their programs' ends and (`left`) which of them still hold their locks, all at once and ASK_WAIT_S for
        them all, the answers kept for recorded_end and left_running. Why apart: those run under the state lock,
        which must not wait on a node (every RPC waits for it), nor a restart wait ASK_WAIT_S a run on a node that
        answers slowly. Not `connected` (--ray off): none asked, each record saying so."""
        runs = [(job.id, record) for job in jobs if (record := record_of(job.id)) is not None and record.node]
        unasked = None if connected else "the controller restarted not connected to Ray (--ray off)"
        try:
            live = live_nodes() if runs and connected else {}
        except Exception as e:  # noqa: BLE001 - Ray's GCS gone: a caller (a restart, an old run's end) goes on
            live, unasked = {}, f"the Ray cluster did not say which nodes are live ({type(e).__name__}: {e})"
        asked = {}  # the call's ref -> (job id, its record, its node's name, what was asked)
        for job_id, record in runs:
            named = f"{record.node_address or 'address unknown'}, Ray node {record.node}"
            if unasked is not None or record.node not in live:  # (gone: its processes went with it, none left)
                self._told(job_id, record, None, f"its Ray node ({named}) has left the Ray cluster, and with it the"
                           " record of how its program ended" if unasked is None else
                           f"{unasked}, so its Ray node ({named}) was not asked how its program ended")
                continue
            actor = self.steps(record.node)
            asked[actor.recorded_exit.remote(record.spool, job_id, record.run)] = (job_id, record, named, "exit")
            if left:
                asked[actor.left_running.remote(record.spool, job_id)] = (job_id, record, named, "left")
        if not asked:
            return
        import ray

        ready = set(ray.wait(list(asked), num_returns=len(asked), timeout=ASK_WAIT_S)[0])
        for ref, (job_id, record, named, what) in asked.items():
            answer, why = None, f"no answer within {ASK_WAIT_S:g} s"
            try:
                if ref in ready:
                    answer, why = ray.get(ref, timeout=0), None
            except Exception as e:  # noqa: BLE001 - a node going as it is asked: as if gone
                answer, why = None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            if what == "exit":
                self._told(job_id, record, answer, None if why is None else f"its Ray node ({named}) did not say"
                           f" how its program ended: {why}")
            elif why is not None:
                log.warning("job %s: the node of its run from before the restart (%s) did not say whether its program"
                            " still runs (%s): its partition is let go", job_id, named, why)
            else:
                with self._lock:
                    self._left[job_id] = answer

    def _told(self, job_id: int, record: ProgramRecord, exit: dict | None, why: str | None) -> None:
        if why is not None:
            log.warning("job %s: run %s: %s", job_id, record.run, why)
        with self._lock:
            self._exits[(job_id, record.run)] = (exit, why)

    def recorded_end(self, job, record: ProgramRecord | None, store) -> RunExit | None:
        """How the job's latest run (`record`) ended, as its node told ask(); None if it did not say, then the record
        stored saying why (`ended`) if its node was gone or silent."""
        if record is None or not record.node or record.run != job.runs_started:
            return None
        with self._lock:
            found, why = self._exits.pop((job.id, record.run), (None, None))
        if why is not None:
            record.ended = why
            store.commit([("program_run", record.name, record)], [])
        if found is None:
            return None
        with self._lock:
            self._read[job.id] = (record.node, str(exit_path(record.spool, job.id, record.run)))
        return RunExit(found["at"], found["exit_code"], found["signal"])

    def forget(self, job_id: int) -> None:
        """The job left the controller's memory, its end written: the exit record recorded_end read on its node goes,
        as one read on this machine does (not waited for: the caller holds the state lock)."""
        with self._lock:
            read = self._read.pop(job_id, None)
        if read is not None:
            self.steps(read[0]).forget_exit.remote(read[1])

    def left_running(self, record: ProgramRecord | None, job_id: int) -> tuple[dict, Callable]:
        """The job's runs whose supervisors still held their locks on the node of its run `record` when ask() asked
        (lock -> pid), and the run_locks.when_gone that watches them there; none when the record names no node, its
        node is gone (its processes went with it) or did not say."""
        import ray

        with self._lock:
            left = self._left.pop(job_id, {})
        if record is None or not record.node or not left:
            return {}, when_gone
        actor = self.steps(record.node)

        def holding(paths: list) -> list:
            try:
                return ray.get(actor.held.remote(paths), timeout=ASK_WAIT_S)
            except Exception as e:  # noqa: BLE001 - its node went meanwhile, and its processes with it
                log.warning("job %s: the node of its run from before the restart (%s) did not answer (%s): its"
                            " partition is let go", job_id, record.node_address or record.node, type(e).__name__)
                return []

        return left, partial(when_gone, holding=holding, poll_s=NODE_POLL_S)


def live_nodes() -> dict[str, str]:
    """The Ray cluster's live nodes: id -> address (one call to its GCS)."""
    import ray

    return {n["NodeID"]: n.get("NodeManagerAddress", "") for n in ray.nodes() if n.get("Alive")}
