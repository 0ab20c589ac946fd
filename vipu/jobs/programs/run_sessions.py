"""A program run's session on its partition's IPUs: its token given to the program, the session opened beside the
run (outside the controller's lock: it brings numpy and the fabric in), closed when the run ends.

Why here: the `command` kind's runner (program_runs.py) owns a run's life; this is the part of it that concerns
the IPUs. With machine actors the session moves data through them (RayTransport on the job's machines); with
`--ray off` through in-process machines (MachineTransport), so capacity is refused alike in both modes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vipu.jobs.train.results import ipu_usage

if TYPE_CHECKING:
    from vipu.jobs.programs.program_record import ProgramRecord
    from vipu.jobs.sessions.session import DeviceSession


def device_environment(ctx, token: str) -> dict[str, str]:
    """What the program gets to reach its IPUs: the DeviceService's address and its run token ({} when off)."""
    device = ctx.device_environment()
    return {**device, "VIPU_RUN_TOKEN": token} if device else {}


def open_session(ctx, token: str, job_id: int, run: int, partition: str, first_ipu: int, size: int,
                 machines: list[int]) -> DeviceSession:
    """The run's session, registered under `token`."""
    from vipu.jobs.sessions.session import DeviceSession

    session = DeviceSession(job_id=job_id, run=run, partition=partition, first_ipu=first_ipu, size=size,
                            pod=ctx.pod, transport=_transport(ctx, first_ipu, size, machines))
    ctx.sessions.open(session, token)
    return session


def _transport(ctx, first_ipu: int, size: int, machines: list[int]):
    fleet = ctx.machines
    if not fleet.enabled:
        return lambda: fleet.machine_transport(machines)

    def on_actors():
        from vipu.fabric import Group
        from vipu.fabric.ray_transport import RayTransport

        return RayTransport.for_group(fleet.actors_for(machines), Group.block(ctx.pod_state().topology, first_ipu,
                                                                               size))

    return on_actors


def keep_steps(record: ProgramRecord, session: DeviceSession, ipus_per_machine: int) -> None:
    """Copy the steps the session reported into the run's record."""
    record.steps = list(session.reports)
    record.steps_reported = session.steps_reported
    record.ipu_usage = ipu_usage(record.steps, ipus_per_machine)
