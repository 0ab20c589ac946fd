"""What a user's program sees when its run starts: the variables sbatch and slurmd set, the partition's IPUoF view
(what poprun forwards to every instance: vipu.md, "The job's environment contract"), and its working directory.

Why SLURM_JOB_PARTITION names the allocation: it is Slurm's partition, the queue the job ran in; the V-IPU partition
the job holds is IPUOF_VIPU_API_PARTITION_ID (slurm_<id>, as the V-IPU Slurm plugin names it). Why no SLURM_NTASKS
here: slurmd sets it for a batch script only when sbatch was given -n, and a vipu job is one task (its script: -n 1
only, which the spec does not keep; SLURM_PROCID 0, as slurmd sets it); the tasks are poprun's instances, and poprun
sets SLURM_NTASKS, SLURM_PROCID and SLURM_LOCALID for each, as srun does for its tasks (launcher.py).
"""

from __future__ import annotations

import math

from vipu.partition import ipuof
from vipu.partition.node_names import hostlist, machine_name
from vipu.partition.partition_record import Partition
from vipu.partition.pod_state import PodState
from vipu.scheduler.arrays import parse_array
from vipu.scheduler.job_record import Job

YEAR_S = 365 * 24 * 3600  # an unlimited job's end, after its start (slurmctld's "secs in year")


def job_environment(job: Job, partition: Partition, state: PodState, api_host: str, api_port: int) -> dict[str, str]:
    """The program's environment: what --export passed on, then Slurm's variables and the IPUoF view over it."""
    work = job.spec.workload
    env = dict(work.environment)  # (what it lacks of its user's login, its supervisor adds: login_environment.py)
    env.update(slurm_variables(job, partition, state))
    env.update(ipuof.environment(partition, state, api_host, api_port))
    env["VIPU_PARTITION_IPUS"] = str(partition.size)  # the launcher checks replicas x IPUs per replica against it
    env["VIPU_CLI_API_HOST"], env["VIPU_CLI_API_PORT"] = api_host, str(api_port)  # `vipu` inside the job finds us
    env["PWD"] = work.workdir
    return env


def node_names(partition: Partition, state: PodState) -> list[str]:
    """The partition's IPU-Machines as Slurm's nodes, in order: an agent's name, else machine03."""
    agents = state.agent_of_machine()
    machines = sorted({state.topology.place(ipu).machine for ipu in partition.ipus})
    return [agents[m].name if m in agents else machine_name(m, state.pod.machines) for m in machines]


def slurm_variables(job: Job, partition: Partition, state: PodState) -> dict[str, str]:
    spec = job.spec
    nodes = node_names(partition, state)
    out = {
        "SLURM_JOB_ID": str(job.id),
        "SLURM_JOBID": str(job.id),
        "SLURM_JOB_NAME": job.name,
        "SLURM_JOB_USER": job.user,
        "SLURM_JOB_QOS": spec.qos or "",
        "SLURM_JOB_PARTITION": spec.allocation or "default",
        "SLURM_SUBMIT_DIR": spec.workload.submit_dir,
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_JOB_NODELIST": hostlist(nodes),  # compressed, as slurmd sets it: ag[04-07]
        "SLURM_NODELIST": hostlist(nodes),  # (slurmd's older name, which scripts and MPI still read)
        "SLURM_JOB_START_TIME": str(int(job.start_time or 0)),  # Unix seconds, as the controller's clock
        "SLURM_JOB_END_TIME": str(int(end_time(job))),
        # 0 on a first run too: Slurm sets it in every batch job since 25.11.7 and 26.05 (env.c setup_env,
        # "Always set SLURM_RESTART_COUNT in batch job environments"); before, only once the job had restarted
        "SLURM_RESTART_COUNT": str(job.requeue_count),
        "SLURM_CLUSTER_NAME": partition.cluster,
        # the batch script is task 0 on the job's first node, as slurmd tells it (Slurm 22.05 sets these in every
        # batch job; scripts gate rank-0 work on SLURM_PROCID): poprun's instances get their own (launcher.py)
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURMD_NODENAME": nodes[0],
    }
    if job.account:
        out["SLURM_JOB_ACCOUNT"] = job.account
    if job.array_job_id is not None:
        indices = parse_array(spec.array).indices if spec.array else (job.array_task_id,)
        out.update({
            "SLURM_ARRAY_JOB_ID": str(job.array_job_id),
            "SLURM_ARRAY_TASK_ID": str(job.array_task_id),
            "SLURM_ARRAY_TASK_COUNT": str(len(indices)),
            "SLURM_ARRAY_TASK_MIN": str(min(indices)),
            "SLURM_ARRAY_TASK_MAX": str(max(indices)),
            "SLURM_ARRAY_TASK_STEP": str(_step(indices)),
        })
    return out


def end_time(job: Job) -> float:
    """When the job's time limit ends it, as slurmctld's job_end_time_reset sets end_time: its start plus its limit,
    or a year after its start for an unlimited one. What the program is told at its start: a later change of the
    limit (vipu update) is not seen, as in Slurm."""
    start = job.start_time or 0.0
    return start + (job.time_limit if math.isfinite(job.time_limit) else YEAR_S)


def _step(indices) -> int:
    """The array's index step, as slurmctld sets SLURM_ARRAY_TASK_STEP: the gap between its indices when they are
    evenly spaced (4 for 1-9:4), else 1. Scripts that walk a range of inputs per task read it."""
    ordered = sorted(indices)
    gaps = {b - a for a, b in zip(ordered, ordered[1:])}
    return gaps.pop() if len(gaps) == 1 else 1
