"""Per-IPU-Link-domain series, which stand in for the per-IPU and per-machine ones on a Pod of more than
PER_IPU_SERIES_MAX IPUs.

Why a limit, and why 4,096: a Prometheus operator budgets series per scrape target. Per IPU the controller exports 7
series (utilisation, SRAM, power, two temperatures, clock, and the job join while a partition holds it), per machine
5 (Streaming Memory and four link counters). A Pod of 4,096 IPUs (64 Pod64 racks) makes about 34,000 series in one
scrape, a few MB of text: within what one target is commonly allowed (Prometheus' `sample_limit` is set per scrape
job; tens of thousands is an ordinary budget for a large exporter). The largest Pod, 65,536 IPUs, would make about
540,000 from this one process: a scrape of tens of MB, which would take this process longer to render than the
5 s scrape interval of deploy/prometheus, and more series than many whole Prometheus servers hold. So above the
limit a domain's 64 IPUs and 16 machines become one series each: the mean utilisation, SRAM, power and link bytes
summed, the hottest IPU's temperatures, and the job join per partition (`vipu_partition_allocation_info`, and
`vipu_partition_ipus` per rack it spans, for the job dashboard) instead of per IPU: about 10 series per Pod64
rack, 10,000 on 65,536 IPUs, and a few per partition; and vipu_link_errors_total{machine} gets a series only
once a machine sees an error. Per-IPU figures stay available from `vipu list ipus` and `vipu top`.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from vipu.control.instruments import PER_IPU_SERIES_MAX
from vipu.hardware.figures import LINK_TYPES
from vipu.hardware.power import power_watts, temperatures_celsius
from vipu.partition.rules import job_of_partition
from vipu.workers.telemetry import ipu_reading

__all__ = ["PER_IPU_SERIES_MAX", "ild_families"]


def ild_families(pod, statuses, partitions, stats):
    """The per-domain families of a large Pod, from the IPUs' statuses and the machines' stats."""
    ilds = pod.ilds
    util, sram, power = [0.0] * ilds, [0.0] * ilds, [0.0] * ilds
    hottest = [0.0] * ilds
    for s in statuses:
        u, used = ipu_reading(stats.get(s.machine), s.ipu, s.working)
        util[s.ild] += u
        sram[s.ild] += used
        power[s.ild] += power_watts(u)
        hottest[s.ild] = max(hottest[s.ild], u)
    labels = ["ild"]
    mean = GaugeMetricFamily("vipu_ild_utilization_ratio", "Mean utilisation of the IPU-Link domain's IPUs (0-1);"
                             " per IPU on Pods of up to 4,096 IPUs.", labels=labels)
    memory = GaugeMetricFamily("vipu_ild_memory_used_bytes", "Tile SRAM in use on the domain's IPUs.", labels=labels)
    watts = GaugeMetricFamily("vipu_ild_power_watts", "Emulated power of the domain's IPUs.", labels=labels)
    temp = GaugeMetricFamily("vipu_ild_temperature_celsius", "Emulated temperature of the domain's hottest IPU, by"
                             " sensor.", labels=["ild", "sensor"])
    per_ild = pod.ild_ipus
    for ild in range(ilds):
        mean.add_metric([str(ild)], util[ild] / per_ild)
        memory.add_metric([str(ild)], sram[ild])
        watts.add_metric([str(ild)], power[ild])
        for sensor, value in temperatures_celsius(hottest[ild]).items():
            temp.add_metric([str(ild), sensor], value)
    yield from (mean, memory, watts, temp)

    streaming = [0.0] * ilds
    sent = {kind: [0.0] * ilds for kind in LINK_TYPES}
    received = {kind: [0.0] * ilds for kind in LINK_TYPES}
    for machine, report in stats.items():
        ild = machine // pod.machines_per_ild
        streaming[ild] += float(report.get("streaming", {}).get("used_bytes", 0))
        for kind in LINK_TYPES:
            link = report.get("links", {}).get(kind, {})
            sent[kind][ild] += link.get("sent_bytes", 0)
            received[kind][ild] += link.get("received_bytes", 0)
    stream = GaugeMetricFamily("vipu_ild_streaming_memory_used_bytes", "Streaming Memory in use on the domain's"
                               " machines.", labels=labels)
    tx = CounterMetricFamily("vipu_ild_link_transmit_bytes", "Bytes the domain's machines sent, by link type.",
                             labels=["ild", "link_type"])
    rx = CounterMetricFamily("vipu_ild_link_receive_bytes", "Bytes the domain's machines received, by link type.",
                             labels=["ild", "link_type"])
    for ild in range(ilds):  # every domain, so rates and joins always find a series
        stream.add_metric([str(ild)], streaming[ild])
        for kind in LINK_TYPES:
            tx.add_metric([str(ild), kind], sent[kind][ild])
            rx.add_metric([str(ild), kind], received[kind][ild])
    yield from (stream, tx, rx)

    join = GaugeMetricFamily("vipu_partition_allocation_info", "Which job holds a partition, and its IPUs (first_ipu"
                             " and ipus); on Pods of up to 4,096 IPUs, vipu_ipu_allocation_info per IPU instead.",
                             labels=["partition", "job_id", "first_ipu", "ipus"])
    # the join's IPUs per domain as a value: PromQL cannot read a label as a number, and a job's panels join on ild
    held = GaugeMetricFamily("vipu_partition_ipus", "IPUs a partition holds in each IPU-Link domain; on Pods of up to"
                             " 4,096 IPUs, count vipu_ipu_allocation_info instead.",
                             labels=["partition", "job_id", "ild"])
    for p in partitions:
        job = "" if (found := job_of_partition(p.name)) is None else str(found)
        join.add_metric([p.name, job, str(p.first_ipu), str(p.size)], 1)
        for first in range(p.first_ipu, p.first_ipu + p.size, per_ild):
            held.add_metric([p.name, job, str(first // per_ild)], min(p.size, per_ild))
    yield from (join, held)
