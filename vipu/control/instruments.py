"""The counters and histograms the edges update as things happen, in one injectable registry.

Why histograms with these buckets: a bucket boundary sits at each SLO we state (submit-to-running 50 ms,
scheduling cycle 50 ms), so `histogram_quantile` and SLO ratios are exact at the SLO.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from vipu.hardware.figures import LINK_TYPES

WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 86400)
CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5)
RPC_LABELS = ["grpc_type", "grpc_service", "grpc_method"]
# Above this many IPUs the series per IPU and per machine give way to series per IPU-Link domain: the budget of
# series one scrape may carry (vipu/metrics/ild_series.py says why 4,096).
PER_IPU_SERIES_MAX = 4096


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.submissions = Counter("vipu_job_submissions", "Jobs accepted by submit (array tasks count each).",
                                   registry=r)
        self.completions = Counter("vipu_job_completions",
                                   "Job runs that ended, by final state (REQUEUED: stopped by vipu requeue).", ["state"],
                                   registry=r)
        self.starts = Counter("vipu_job_starts", "Job runs started on a partition.", registry=r)
        self.queue_wait = Histogram("vipu_job_queue_wait_seconds",
                                    "Submit (or requeue, or begin time if later) to start of each run.",
                                    buckets=WAIT_BUCKETS, registry=r)
        self.cycle = Histogram("vipu_scheduler_cycle_seconds", "Wall-clock time of one scheduling step.",
                               buckets=CYCLE_BUCKETS, registry=r)
        # gRPC's series under the names and labels of go-grpc-prometheus and py-grpc-prometheus, so the usual
        # gRPC dashboards and alerts work on them; the histogram also has grpc_code (theirs has not), so a failure's
        # latency is told apart from a success's (queries that sum it away are unaffected)
        self.rpc_started = Counter("grpc_server_started", "RPCs started on the server.", RPC_LABELS, registry=r)
        self.rpc_handled = Counter("grpc_server_handled", "RPCs completed on the server, whatever their status.",
                                   [*RPC_LABELS, "grpc_code"], registry=r)
        self.rpc_seconds = Histogram("grpc_server_handling_seconds", "Time the server took to handle an RPC.",
                                     [*RPC_LABELS, "grpc_code"], buckets=RPC_BUCKETS, registry=r)
        self.policy_fallbacks = Counter(
            "vipu_scheduler_policy_fallbacks", "Scheduling cycles the --policy-file policy failed (it raised, or decided"
            " what the snapshot does not allow), decided by the built-in --policy instead; the log says where.",
            registry=r)
        self.history_move_failures = Counter(
            "vipu_history_move_failures", "Moves of ended jobs into the on-disk job history that failed (a damaged"
            " history page, a failing disk): the jobs stay in memory, the queue goes on; the log says why.",
            registry=r)
        self.link_errors = Counter("vipu_link_errors", "IPU-Link failures seen by a machine (either end of a link"
                                   " failed with vipu-admin fail link), by link type.", ["machine", "link_type"],
                                   registry=r)

    def know_machines(self, machines: int, ipus: int) -> None:
        """Every machine's link-error series from 0, so rates and joins always find one; on a Pod above
        PER_IPU_SERIES_MAX IPUs only those of machines that saw an error (32,768 series on 65,536 IPUs else)."""
        for machine in range(machines if ipus <= PER_IPU_SERIES_MAX else 0):
            for kind in LINK_TYPES:
                self.link_errors.labels(str(machine), kind)
