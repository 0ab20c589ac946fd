"""Small traces the tests write themselves, in each format's real layout (no public data is copied)."""

from __future__ import annotations

import random
from pathlib import Path

OPENB_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
                "scheduled_time")


def write_openb(path: Path, rows: int = 400, seed: int = 7, timed: bool = True) -> Path:
    """An openb pod list of `rows` made-up tasks: CPU-only ones, GPU shares, multi-GPU ones and a few never
    scheduled, arriving over a few days (timed), or only their resources (the multigpu variants' columns)."""
    rng = random.Random(seed)
    lines = [OPENB_HEADER if timed else "name,cpu_milli,memory_mib,num_gpu,gpu_milli"]
    at = 0
    for n in range(rows):
        gpus = rng.choices([0, 1, 2, 4, 8], [15, 60, 10, 10, 5])[0]
        milli = rng.choice([1000, 1000, 500, 460, 220]) if gpus == 1 else (1000 if gpus else 0)
        if not timed:
            lines.append(f"openb-pod-{n:04d},4000,16384,{gpus},{milli}")
            continue
        at += rng.randint(0, 900)
        ran = int(rng.lognormvariate(7, 1.5)) + 1
        qos = rng.choice(["LS", "BE", "Burstable"])
        scheduled, deleted = (at + rng.randint(0, 30), "") if rng.random() > 0.05 else ("", "")
        if scheduled != "":
            deleted = scheduled + ran
        lines.append(f"openb-pod-{n:04d},4000,16384,{gpus},{milli},,{qos},Running,{at},{deleted},{scheduled}")
    path.write_text("\n".join(lines) + "\n")
    return path


# SWF, version 2.2 layout: header comments, then 18 fields per job (-1: unknown). On a Pod16 with next-pow2, fifo:
#   job 1: 16 processors, submit 0, run 100 -> starts 0, ends 100
#   job 2: 3 processors -> 4 IPUs, submit 10, run 5 -> waits for job 1: starts 100, ends 105
#   job 3: 4 processors, submit 20, run 50, requested -1 -> starts 100 beside job 2, ends 150
#   job 4: cancelled before it ran (status 5, run 0): skipped; job 5: run time -1: skipped
#   job 6: a partial run (status 2): skipped; job 7: 32 processors: larger than the Pod, skipped
SWF = """\
; Version: 2.2
; Computer: a made-up machine
; MaxProcs: 16
; Note: written for vipu-sim's tests
    1        0     3   100   16  -1 -1   16   200 -1 1  1  1 -1 1 -1 -1 -1
    2       10     0     5    3  -1 -1    3    60 -1 1  2  1 -1 1 -1 -1 -1
    3       20     0    50   -1  -1 -1    4    -1 -1 0  1  1 -1 1 -1 -1 -1
    4       25     9     0    8  -1 -1    8    60 -1 5  3  2 -1 1 -1 -1 -1
    5       30     0    -1    2  -1 -1    2    60 -1 1  3  2 -1 1 -1 -1 -1
    6       35     0    10    2  -1 -1    2    60 -1 2  3  2 -1 1 -1 -1 -1
    7       40     0    10   32  -1 -1   32    60 -1 1  3  2 -1 1 -1 -1 -1
"""

# Helios cluster_log.csv layout (S-Lab-System-Group/HeliosData); made-up rows
HELIOS = """\
job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
101,uAlice,vcA,1,4,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:51:01,600,0
102,uBob,vcA,0,8,1,COMPLETED,2020-06-09 18:41:10,2020-06-09 18:41:10,2020-06-09 18:42:10,60,0
103,uBob,vcB,2,8,1,FAILED,2020-06-09 18:42:01,2020-06-09 18:42:01,2020-06-09 18:43:01,60,0
104,uCarol,vcB,4,16,1,CANCELLED,2020-06-09 18:43:01,,,0,0
105,uAlice,vcA,8,32,1,COMPLETED,2020-06-09 18:44:01,2020-06-09 18:44:11,2020-06-09 19:44:11,3600,10
"""
