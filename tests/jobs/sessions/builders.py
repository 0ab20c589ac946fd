"""A session on in-process machines, as the controller opens one with --ray off (no gRPC, no controller)."""

from __future__ import annotations

import threading

from vipu.fabric.machine_transport import MachineTransport
from vipu.hardware.pod_files import load_pod
from vipu.jobs.sessions.session import DeviceSession
from vipu.workers.machine import Machine

POD = load_pod("bow-pod16")


def machines_for(first: int, size: int, pod=POD) -> dict:
    per = pod.machine.ipus
    return {m: (Machine(pod, m), threading.Lock()) for m in range(first // per, (first + size - 1) // per + 1)}


def session(first: int = 0, size: int = 4, machines: dict | None = None, job_id: int = 7, run: int = 1,
            clock=lambda: 0.0, pod=POD) -> DeviceSession:
    machines = machines if machines is not None else machines_for(first, size, pod)
    return DeviceSession(job_id=job_id, run=run, partition=f"slurm_{job_id}", first_ipu=first, size=size, pod=pod,
                         transport=lambda: MachineTransport(machines, pod.machine.ipus), clock=clock)
