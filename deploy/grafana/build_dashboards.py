"""Build the Grafana dashboards of vipu-sim as code: `python deploy/grafana/build_dashboards.py` rewrites
deploy/grafana/dashboards/*.json (a test checks the committed files equal what this builds); `--out DIR` writes
them elsewhere, `--help` says so.

Three dashboards: the cluster overview, one job (chosen by the `job` variable), and the scheduler's health.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vipu.partition.ipu_states import IN_USE

OUT = Path(__file__).resolve().parent / "dashboards"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# the IPUs a job holds, by the controller's list, as the recording rule vipu:ipus_allocated:ratio counts them (a test
# checks deploy/prometheus/vipu.rules.yml against it)
IN_USE_IPUS = f'vipu_ipus{{state=~"{"|".join(IN_USE)}"}}'
# the IPUs of jobs' partitions (slurm_<id>), not hand-made ones; above 4,096 IPUs, the partitions' join
JOB_SERIES = '{__name__=~"vipu_ipu_allocation_info|vipu_partition_allocation_info", job_id!=""}'


def panel(title: str, exprs: list[str], kind: str = "timeseries", unit: str = "short", w: int = 12, h: int = 8,
          legend: str = "") -> dict:
    return {
        "title": title,
        "type": kind,
        "datasource": DATASOURCE,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
            for i, expr in enumerate(exprs)
        ],
    }


def dashboard(uid: str, title: str, panels: list[dict], variables: list[dict] | None = None) -> dict:
    x = y = 0
    for i, p in enumerate(panels):  # lay panels out left to right, wrapping at Grafana's 24 columns
        if x + p["gridPos"]["w"] > 24:
            x, y = 0, y + 8
        p["gridPos"].update({"x": x, "y": y})
        p["id"] = i + 1
        x += p["gridPos"]["w"]
    datasource_var = {"name": "datasource", "type": "datasource", "query": "prometheus", "current": {}}
    return {
        "uid": uid,
        "title": title,
        "tags": ["vipu-sim"],
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "10s",
        "templating": {"list": [datasource_var, *(variables or [])]},
        "panels": panels,
    }


def cluster() -> dict:
    # Above 4,096 IPUs the controller exports series per Pod64 rack (vipu_ild_*) instead of per IPU and machine
    # (vipu/metrics/ild_series.py): each per-IPU query falls back to the rack series with `or`, so one dashboard
    # serves both sizes (only one side of each `or` exists on a given Pod).
    return dashboard("vipu-cluster", "vipu-sim / Cluster overview", [
        panel("IPU utilisation per Pod64", ["avg by (ild) (vipu_ipu_utilization_ratio)"
                                            " or avg by (ild) (vipu_ild_utilization_ratio)"],
              unit="percentunit", legend="pod64-{{ild}}"),
        panel("IPU utilisation by IPU; by Pod64 above 4,096 IPUs (heatmap)",
              ["vipu_ipu_utilization_ratio or vipu_ild_utilization_ratio"], kind="heatmap", unit="percentunit",
              legend="pod64-{{ild}} m{{machine}} ipu{{ipu}}"),
        # in use: draining IPUs still run their job (their agent is drained), and completing ones are still held by
        # a job whose program is ending (KillWait), as the recording rule counts them
        panel("IPUs in use (allocated, completing or draining) per Pod64",
              [f"sum by (ild) ({IN_USE_IPUS}) / sum by (ild) (vipu_ipus)"],
              unit="percentunit", legend="pod64-{{ild}}"),
        panel("IPUs by state", ["sum by (state) (vipu_ipus)"], legend="{{state}}"),
        # on () : the rack counts only when no IPU is held per IPU (a large Pod, or nothing allocated)
        panel("Allocated IPUs per machine; per Pod64 above 4,096 IPUs (heatmap)",
              ["count by (machine) (vipu_ipu_allocation_info)"
               f" or on () sum by (ild) ({IN_USE_IPUS})"],
              kind="heatmap", legend="pod64-{{ild}} m{{machine}}"),
        panel("Queue depth", ['vipu_jobs{state="PENDING"}'], legend="pending"),
        panel("Jobs by state", ['vipu_jobs{state=~"PENDING|RUNNING|COMPLETING"}'], legend="{{state}}"),
        panel("Partitions by state", ["vipu_partitions"], legend="{{state}}"),
        panel("Power per machine; per Pod64 above 4,096 IPUs (emulated)",
              ["sum by (ild, machine) (vipu_ipu_power_watts) or sum by (ild) (vipu_ild_power_watts)"], unit="watt",
              legend="pod64-{{ild}} m{{machine}}"),
        panel("Hottest IPU die", ['max(vipu_ipu_temperature_celsius{sensor="die"})'
                                  ' or max(vipu_ild_temperature_celsius{sensor="die"})'], unit="celsius"),
        panel("Link traffic by type", ["sum by (link_type) (rate(vipu_link_transmit_bytes_total[$__rate_interval]))"
                                       " or sum by (link_type) (rate(vipu_ild_link_transmit_bytes_total"
                                       "[$__rate_interval]))"],
              unit="Bps", legend="{{link_type}}"),
        panel("Job runs ended (per minute)", ["sum by (state) (rate(vipu_job_completions_total[$__rate_interval])) * 60"],
              legend="{{state}}"),
    ])


def job() -> dict:
    # partitions made by hand carry job_id="" in the join: only jobs' ids are choices (an empty one matched nothing)
    variable = {"name": "job", "type": "query", "datasource": DATASOURCE,
                "query": f"label_values({JOB_SERIES}, job_id)", "refresh": 2, "current": {}}
    mine = 'vipu_ipu_allocation_info{job_id="$job"}'
    # above 4,096 IPUs: the IPUs the job's partition holds per rack, and its racks (their figures include any other
    # job sharing a rack)
    racks = 'sum by (ild) (vipu_partition_ipus{job_id="$job"})'
    return dashboard("vipu-job", "vipu-sim / Job", [
        panel("IPUs of the job", [f"count({mine}) or sum({racks})"], kind="stat"),
        # an IPU-Machine has 4 IPUs (M2000 and Bow-2000 datasheets); a partition of 1 or 2 IPUs uses one machine
        panel("Machines of the job", [f"count(count by (machine) ({mine}))"
                                      ' or sum(ceil(sum by (partition) (vipu_partition_ipus{job_id="$job"}) / 4))'],
              kind="stat"),
        panel("IPUs of the job by machine; by Pod64 above 4,096 IPUs", [f"count by (machine) ({mine}) or {racks}"],
              legend="pod64-{{ild}} m{{machine}}"),
        panel("Utilisation of the job's IPUs; of its Pod64 racks above 4,096 IPUs", [
            f"avg(vipu_ipu_utilization_ratio * on (machine, ipu) group_left (job_id) {mine})"
            f" or sum(vipu_ild_utilization_ratio * on (ild) group_left () {racks}) / sum({racks})",
        ], unit="percentunit"),
        panel("Link traffic of the job's machines; of its Pod64 racks above 4,096 IPUs", [
            "sum by (link_type) (rate(vipu_link_transmit_bytes_total[$__rate_interval])"
            f" * on (machine) group_left () (count by (machine) ({mine}) > bool 0))"
            " or sum by (link_type) (rate(vipu_ild_link_transmit_bytes_total[$__rate_interval])"
            f" * on (ild) group_left () ({racks} > bool 0))",
        ], unit="Bps", legend="{{link_type}}"),
        # a modelled job (execute: false) computes nothing: its series is the planner's prediction, labelled so
        panel("Emulated step time (training jobs; modelled=true: predicted)", ['vipu_job_step_seconds{job_id="$job"}'],
              unit="s", legend="modelled={{modelled}}"),
        panel("Loss (training jobs)", ['vipu_job_loss{job_id="$job"}']),
        panel("SRAM in use on the job's IPUs; on its Pod64 racks above 4,096 IPUs", [
            f"sum(vipu_ipu_memory_used_bytes * on (machine, ipu) group_left (job_id) {mine})"
            f" or sum(vipu_ild_memory_used_bytes * on (ild) group_left () ({racks} > bool 0))",
        ], unit="bytes"),
    ], [variable])


def scheduler() -> dict:
    return dashboard("vipu-scheduler", "vipu-sim / Scheduler health", [
        panel("Scheduling cycle p50 / p99", [
            "histogram_quantile(0.5, sum by (le) (rate(vipu_scheduler_cycle_seconds_bucket[$__rate_interval])))",
            "histogram_quantile(0.99, sum by (le) (rate(vipu_scheduler_cycle_seconds_bucket[$__rate_interval])))",
        ], unit="s"),
        panel("Queue wait p50 / p95", [
            "histogram_quantile(0.5, sum by (le) (rate(vipu_job_queue_wait_seconds_bucket[$__rate_interval])))",
            "histogram_quantile(0.95, sum by (le) (rate(vipu_job_queue_wait_seconds_bucket[$__rate_interval])))",
        ], unit="s"),
        panel("Submissions per second", ["sum(rate(vipu_job_submissions_total[$__rate_interval]))"], unit="reqps"),
        # go-grpc-prometheus's series and labels (vipu/metrics/interceptor.py), as gRPC dashboards expect them
        panel("gRPC requests per second by code", [
            'sum by (grpc_code) (rate(grpc_server_handled_total{grpc_service=~"vipu.v1.*"}[$__rate_interval]))',
        ], unit="reqps", legend="{{grpc_code}}"),
        panel("gRPC latency p99 by method (successful requests)", [
            "histogram_quantile(0.99, sum by (le, grpc_service, grpc_method)"
            ' (rate(grpc_server_handling_seconds_bucket{grpc_code="OK"}[$__rate_interval])))',
        ], unit="s", legend="{{grpc_service}}/{{grpc_method}}", w=24),
        panel("gRPC latency p99 by status code", [
            "histogram_quantile(0.99, sum by (le, grpc_code)"
            " (rate(grpc_server_handling_seconds_bucket[$__rate_interval])))",
        ], unit="s", legend="{{grpc_code}}"),
        panel("Jobs that could start now (VipuQueueStuck fires when some stay so for 15 minutes)",
              ["vipu_jobs_startable"], legend="startable"),
        panel("State store writes (VipuStoreNotWritable fires at 0)", ["vipu_store_writable"], legend="writable"),
        panel("Controller CPU", ['rate(process_cpu_seconds_total{job="vipu"}[$__rate_interval])'], unit="percentunit",
              legend="{{instance}}"),
        panel("Controller memory", ['process_resident_memory_bytes{job="vipu"}'], unit="bytes", legend="{{instance}}"),
        panel("Controller build", ["vipu_build_info"], kind="table",
              legend="{{version}} {{revision}} Ray {{ray_version}} Python {{python_version}}"),
    ])


DASHBOARDS = {"cluster.json": cluster, "job.json": job, "scheduler.json": scheduler}


def build() -> dict[str, str]:
    return {name: json.dumps(make(), indent=2, sort_keys=True) + "\n" for name, make in DASHBOARDS.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Build the Grafana dashboards of vipu-sim and write them as JSON (what Grafana's file"
        " provisioning in deploy/grafana/provisioning loads).")
    parser.add_argument("--out", type=Path, default=OUT,
                        help="folder to write the dashboards to (default: deploy/grafana/dashboards)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (args.out / name).write_text(text)
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
