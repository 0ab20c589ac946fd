"""The state gauges, read from the controller and the queue at scrape time (the dcgm-exporter and
prometheus-slurm-exporter design): nothing to keep in step, and a scrape sees one consistent moment.

Why the IPU-to-job join is its own info metric: per-IPU series live for ever, so they must not carry a job label
(unbounded); `vipu_ipu_allocation_info{machine,ipu,partition,job} 1` exists only while the IPU is allocated.
"""

from __future__ import annotations

from collections import Counter

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from vipu.partition.states import PartitionState
from vipu.scheduler.states import JobState


class StateCollector(Collector):
    def __init__(self, runtime):
        self.rt = runtime

    def collect(self):
        with self.rt.lock:
            controller, scheduler = self.rt.controller, self.rt.scheduler
            pod = controller.pod
            statuses = controller.partitions.ipu_statuses()
            partitions = list(controller.state.partitions.values())
            jobs_by_state = Counter(job.state for job in scheduler.table.jobs.values())
            holders = {p.name: p.holder or "" for p in partitions}

        info = InfoMetricFamily("vipu_pod", "The Pod this controller manages.")
        info.add_metric([], {"pod": pod.name, "ipus": str(pod.ipus), "ilds": str(pod.ilds)})
        yield info

        ipus = GaugeMetricFamily("vipu_ipus", "IPUs by state and IPU-Link domain (Pod64).", labels=["state", "ild"])
        counts = Counter((s.state, s.ild) for s in statuses)
        for ild in range(pod.ilds):
            for state in ("idle", "allocated", "failed"):
                ipus.add_metric([state, str(ild)], counts.get((state, ild), 0))
        yield ipus

        parts = GaugeMetricFamily("vipu_partitions", "Partitions by state.", labels=["state"])
        by_state = Counter(p.state for p in partitions)
        for state in PartitionState:
            if state is not PartitionState.REMOVED:
                parts.add_metric([state.value], by_state.get(state, 0))
        yield parts

        jobs = GaugeMetricFamily("vipu_jobs", "Jobs by state.", labels=["state"])
        for state in JobState:
            jobs.add_metric([state.value], jobs_by_state.get(state, 0))
        yield jobs

        join = GaugeMetricFamily(
            "vipu_ipu_allocation_info", "Which partition (and job) holds an IPU; present only while allocated.",
            labels=["machine", "ipu", "partition", "job"],
        )
        for s in statuses:
            if s.partition:
                holder = holders.get(s.partition, "")
                job = holder.removeprefix("job ") if holder.startswith("job ") else ""
                join.add_metric([str(s.machine), str(s.ipu), s.partition, job], 1)
        yield join
