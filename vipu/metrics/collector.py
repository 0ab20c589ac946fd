"""The state gauges, read from the controller and the queue at scrape time (the dcgm-exporter and
prometheus-slurm-exporter design): nothing to keep in step, and a scrape sees one consistent moment.

Why the IPU-to-job join is its own info metric: per-IPU series live for ever, so they must not carry a job label
(unbounded); `vipu_ipu_allocation_info{machine,ipu,partition,job_id} 1` exists only while a partition holds the IPU.
The label is `job_id`, not `job`: Prometheus gives every scraped series its target's `job` label, and ours would
be renamed to `exported_job` on the way in.
"""

from __future__ import annotations

from collections import Counter

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from vipu.hardware.figures import LINK_TYPES
from vipu.metrics.ild_series import PER_IPU_SERIES_MAX, ild_families
from vipu.partition.agent_states import NODE_STATES
from vipu.partition.ipu_states import IPU_STATES
from vipu.partition.node_names import machine_name
from vipu.partition.partition_states import PartitionState
from vipu.partition.rules import job_of_partition
from vipu.scheduler.job_states import JobState
from vipu.hardware.power import power_watts, temperatures_celsius
from vipu.workers.telemetry import ipu_reading


class StateCollector(Collector):
    def __init__(self, plane, per_ipu_max: int = PER_IPU_SERIES_MAX):
        self.plane = plane
        self.per_ipu_max = per_ipu_max  # above this many IPUs, series per IPU-Link domain (ild_series.py)

    def collect(self):
        if self.plane.unrecovered is not None:  # the queue waits for Ray (control/queue_rebuild.py): an empty one
            return  # would read as every job gone; absent series say nothing until it is rebuilt
        snap = self.plane.read()  # one moment, read without the lock writes take
        pod = snap.pod.pod
        statuses = snap.ipu_statuses()
        partitions = list(snap.pod.partitions.values())
        jobs_by_state = snap.queue.jobs_by_state()
        startable = snap.queue.startable(snap.available_mask, snap.allowed_masks)

        info = InfoMetricFamily("vipu_pod", "The Pod this controller manages.")
        info.add_metric([], {"pod": pod.name, "ipus": str(pod.ipus), "ilds": str(pod.ilds)})
        yield info

        # draining apart from allocated and drained: it holds a job (in use) on an agent taking no new work;
        # completing apart from allocated: held, but by a job that has ended (sinfo's comp), free once torn down
        ipus = GaugeMetricFamily("vipu_ipus", "IPUs by state (idle, allocated, completing: its job ended, its program"
                                 " still ending, draining: a partition holds it on a drained agent, drained, failed)"
                                 " and IPU-Link domain (Pod64).", labels=["state", "ild"])
        counts = Counter((s.state, s.ild) for s in statuses)
        for ild in range(pod.ilds):
            for state in IPU_STATES:
                ipus.add_metric([state, str(ild)], counts.get((state, ild), 0))
        yield ipus

        # a machine as sinfo shows a node, by the rule `vipu info -N` reads: a machine with a failed IPU and the
        # others idle is mixed (not whole, yet taking work on the others), all failed down (agent_states.node_state)
        machines = GaugeMetricFamily("vipu_machines", "IPU-Machines by state, as `vipu info -N` shows them (sinfo's"
                                     " node states: idle, allocated, mixed, completing, draining, drained, down).",
                                     labels=["state"])
        by_node_state = snap.machine_state_counts()
        for state in NODE_STATES:
            machines.add_metric([state], by_node_state.get(state, 0))
        yield machines

        parts = GaugeMetricFamily("vipu_partitions", "Partitions by state.", labels=["state"])
        by_state = Counter(p.state for p in partitions)
        for state in PartitionState:
            if state is not PartitionState.REMOVED:
                parts.add_metric([state.value], by_state.get(state, 0))
        yield parts

        jobs = GaugeMetricFamily("vipu_jobs", "Jobs by state, as squeue shows it (COMPLETING while torn down).",
                                 labels=["state"])
        for state in JobState:
            jobs.add_metric([state.value], jobs_by_state.get(state, 0))
        yield jobs
        yield GaugeMetricFamily(
            "vipu_jobs_startable", "Pending jobs that could start now: eligible, held back by nothing but the"
            " scheduler, and fitting in a free aligned block of the IPUs they may use.", value=startable)

        yield from self.store()
        yield from self.training()
        if pod.ipus > self.per_ipu_max:
            yield from ild_families(pod, statuses, partitions, self.plane.machine_stats())
            return
        join = GaugeMetricFamily(
            "vipu_ipu_allocation_info", "Which partition (and job) holds an IPU; present only while one does"
            " (allocated, completing or draining).",
            labels=["machine", "ipu", "partition", "job_id"],
        )
        for s in statuses:
            if s.partition:
                job = job_of_partition(s.partition)
                join.add_metric([str(s.machine), str(s.ipu), s.partition, "" if job is None else str(job)], 1)
        yield join
        yield self.nodes(snap.pod)
        yield from self.machines(pod, statuses)

    @staticmethod
    def nodes(state):
        """Each machine's node name, for a join (`* on(machine) group_left(node) vipu_machine_info`): the series
        carry the machine's number, which a legend sorts 1, 10, 100; the name, as the CLI shows it, is padded to the
        Pod's widest number (ag001) and sorts as it reads. Not on a Pod of more than per_ipu_max IPUs, which has no
        per-machine series to join."""
        info = GaugeMetricFamily("vipu_machine_info", "Each IPU-Machine's node name (its agent's, as `vipu info -N`"
                                 " and the queue's node lists name it) and IPU-Link domain.",
                                 labels=["machine", "node", "ild"])
        agents, pod = state.agent_of_machine(), state.pod
        for m in range(pod.machines):
            name = agents[m].name if m in agents else machine_name(m, pod.machines)
            info.add_metric([str(m), name, str(m // pod.machines_per_ild)], 1)
        return info

    def store(self):
        """Whether the state store writes (the alerts VipuStoreNotWritable and VipuStoreWriteFailures)."""
        writes = self.plane.store_writes()
        yield GaugeMetricFamily("vipu_store_writable", "1 while the state store writes; 0 from a failed or timed-out"
                                " write until one works again (gRPC health is NOT_SERVING meanwhile).",
                                value=int(writes.writable))
        yield CounterMetricFamily("vipu_store_write_failures", "State store writes that failed or timed out while it"
                                  " wrote (their changes undone, their callers told nothing changed); not the retries"
                                  " while it cannot write.", value=writes.failures)

    def training(self):
        """Per-step figures of running training jobs; the series exist only while the job runs. A modelled job
        (execute: false) computes nothing: its step series carry modelled="true" and hold the planner's prediction,
        and it has no loss series (and moves no link bytes)."""
        step = GaugeMetricFamily("vipu_job_step_seconds", "Emulated step time of a running training job (modelled"
                                 "=\"true\": the planner's predicted step time of a job that computes nothing).",
                                 labels=["job_id", "modelled"])
        loss = GaugeMetricFamily("vipu_job_loss", "Loss of a running training job's last step.", labels=["job_id"])
        link = GaugeMetricFamily("vipu_job_step_link_bytes", "Link bytes of the job's last step, by link type.",
                                 labels=["job_id", "link_type"])
        for job_id, reports in self.plane.progress().items():
            if reports:
                last = reports[-1]
                modelled = "true" if last.modelled else "false"
                step.add_metric([str(job_id), modelled], last.emulated_step_s)
                if last.loss is not None:
                    loss.add_metric([str(job_id)], last.loss)
                for kind, value in last.bytes_per_link_type.items():
                    link.add_metric([str(job_id), kind], value)
        yield from (step, loss, link)

    def machines(self, pod, statuses):
        """Per-IPU and per-link series, fed by the machine actors, or with --ray off by the training runs' steps
        (ControlPlane.machine_stats); an IPU its machine reports nothing for is idle."""
        stats = self.plane.machine_stats()  # actor calls
        ipu_labels = ["ild", "machine", "ipu"]
        util = GaugeMetricFamily("vipu_ipu_utilization_ratio", "Compute time / step time of the IPU's last work (0-1).",
                                 labels=ipu_labels)
        sram = GaugeMetricFamily("vipu_ipu_memory_used_bytes", "Tile SRAM in use on the IPU.", labels=ipu_labels)
        power = GaugeMetricFamily("vipu_ipu_power_watts", "Emulated IPU power (vipu/hardware/power.py).",
                                  labels=ipu_labels)
        temp = GaugeMetricFamily("vipu_ipu_temperature_celsius", "Emulated temperature by sensor.",
                                 labels=[*ipu_labels, "sensor"])
        clock = GaugeMetricFamily("vipu_ipu_clock_hertz", "IPU clock.", labels=ipu_labels)
        for s in statuses:
            u, sram_used = ipu_reading(stats.get(s.machine), s.ipu, s.working)
            labels = [str(s.ild), str(s.machine), str(s.ipu)]
            util.add_metric(labels, u)
            sram.add_metric(labels, float(sram_used))
            power.add_metric(labels, power_watts(u))
            for sensor, value in temperatures_celsius(u).items():
                temp.add_metric([*labels, sensor], value)
            clock.add_metric(labels, pod.ipu.clock_hz)
        yield from (util, sram, power, temp, clock)

        streaming = GaugeMetricFamily("vipu_machine_streaming_memory_used_bytes", "Streaming Memory in use.",
                                      labels=["machine"])
        link_labels = ["machine", "link_type"]
        sent = CounterMetricFamily("vipu_link_transmit_bytes", "Bytes sent over links, by machine and link type.",
                                   labels=link_labels)
        received = CounterMetricFamily("vipu_link_receive_bytes", "Bytes received over links, by machine and link type.",
                                       labels=link_labels)
        stale = GaugeMetricFamily("vipu_machine_stats_stale", "1 while the machine's counters are its last answer:"
                                  " its actor did not answer this scrape in time (busy, restarting, or its node lost).",
                                  labels=["machine"])
        for machine in range(pod.machines):  # every machine, so rates and joins always find a series
            report = stats.get(machine, {})
            stale.add_metric([str(machine)], float(bool(report.get("stale"))))
            streaming.add_metric([str(machine)], float(report.get("streaming", {}).get("used_bytes", 0)))
            links = report.get("links", {})
            for kind in LINK_TYPES:
                labels = [str(machine), kind]
                sent.add_metric(labels, links.get(kind, {}).get("sent_bytes", 0))
                received.add_metric(labels, links.get(kind, {}).get("received_bytes", 0))
        yield from (stale, streaming, sent, received)  # vipu_link_errors_total: counted as links fail (instruments.py)
