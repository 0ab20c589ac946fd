"""A trace the project makes itself (`vipu simulate --synthetic N`): seeded, documented as synthetic, with job sizes,
run times and users drawn like a GPU cluster's, so a fresh clone (`make demo`, the tests, the docs) replays
something cluster-like without a public trace on disk.

The shape, not the data, follows published GPU-cluster studies (Philly, ATC'19; Helios, SC'21; Alibaba PAI,
NSDI'22): most jobs take one GPU and few take more than eight; run times are heavy-tailed, minutes for most and days
for a few; a handful of users submit most jobs. Figures from it are about the policies, not any real cluster.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from vipu.replay.arrivals import Draws, drawn
from vipu.replay.trace_rows import Trace, TraceJob, per_gpu, rounded_limit

GPUS = {1: 0.62, 2: 0.12, 4: 0.12, 8: 0.10, 16: 0.03, 32: 0.01}  # GPUs per job -> share of jobs
IPUS_PER_GPU = 4
RUN_MU, RUN_SIGMA = math.log(900), 1.8  # ln seconds: a median of 15 minutes, a tail of days
SHORTEST, LONGEST = 1.0, 2 * 86400.0
USERS = 16  # user01 .. user16, the k-th submitting in proportion to 1/k
QOS = {"normal": 0.85, "low": 0.10, "high": 0.05}  # the default scheduler config's QOS (high preempts low)


def generated_trace(jobs: int, seed: int, pod_ipus: int, max_ipus: int, load: float = 0.8,
                    ipus_per_gpu: int = IPUS_PER_GPU) -> Trace:
    """`jobs` jobs drawn from `seed`, arriving as a Poisson process at offered `load` on a Pod of `pod_ipus`."""
    rng = random.Random(seed)
    sizes, shares = list(GPUS), list(GPUS.values())
    users = [f"user{k:02d}" for k in range(1, USERS + 1)]
    weights = [1 / k for k in range(1, USERS + 1)]
    skipped: Counter = Counter()
    out = []
    for n in range(1, jobs + 1):
        ipus = rng.choices(sizes, shares)[0] * ipus_per_gpu
        duration = float(round(min(LONGEST, max(SHORTEST, rng.lognormvariate(RUN_MU, RUN_SIGMA)))))
        user = rng.choices(users, weights)[0]
        qos = rng.choices(list(QOS), list(QOS.values()))[0]
        if ipus > max_ipus:
            skipped["larger than the Pod's largest partition"] += 1
            continue
        out.append(TraceJob(submit_time=0.0, ipus=ipus, duration=duration, time_limit=rounded_limit(duration),
                            user=user, qos=qos, name=f"synth{n}", source=f"synthetic job {n}", line=n))
    share = ", ".join(f"{g} ({p:.0%})" for g, p in GPUS.items())
    mapping = (f"synthetic GPU-cluster-like trace of {jobs} jobs (vipu/replay/generated_trace.py, seed {seed}; no real"
               f" cluster's data): GPUs per job {share}, {per_gpu(ipus_per_gpu)}; run times lognormal(mu=ln 900,"
               f" sigma={RUN_SIGMA:g}) s within {SHORTEST:.0f} s..{LONGEST / 86400:.0f} days; time_limit = run time"
               f" rounded up to a power-of-two number of minutes; users user01..user{USERS:02d} submitting as 1/k;"
               " qos normal 85%, low 10%, high 5%")
    trace = Trace(out, mapping, skipped, frozenset({"arrivals"}))
    return drawn(trace, Draws(arrivals="poisson", load=load), seed, pod_ipus)
