"""The configuration a running controller uses, as `scontrol show config` prints it: Key = Value entries, sorted.

Why one list of strings: it is read by people (and scripts grepping a key), and every user may read it, as every
Slurm user may read scontrol show config. So it holds no secret: an access key, a TLS private key and the admin
key file are never named; a TLS certificate is public. What the scheduler config holds is listed field by field,
so a field added to SchedulerConfig shows without a change here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pydantic import BaseModel, BeforeValidator

from vipu import __version__
from vipu.scheduler.config import PriorityWeights, SchedulerConfig
from vipu.scheduler.durations import parse_duration

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane

NULL = "(null)"  # scontrol's word for a setting not given
# a SchedulerConfig field that is a Slurm parameter under another name: shown by Slurm's name
SLURM_NAMES = {"policy": "SchedulerType", "policy_file": "SchedulerPolicyFile", "max_age": "PriorityMaxAge",
               "fairshare_half_life": "PriorityDecayHalfLife", "max_jobs": "MaxJobCount",
               "max_job_test": "BfMaxJobTest"}


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def value(v: object, seconds: bool = False) -> str:
    """A setting as scontrol shows one: `30 sec`, `yes`, `(null)`; a table (the QOS) as compact JSON."""
    if v is None or v == "" or v == ():
        return NULL
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, (int, float)):
        return f"{v:g} sec" if seconds else f"{v:g}"
    if isinstance(v, dict):  # the QOS table: each QOS with the limits it sets
        v = {k: x.model_dump(mode="json", exclude_none=True) if isinstance(x, BaseModel) else x for k, x in v.items()}
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def _is_seconds(field) -> bool:
    return any(isinstance(m, BeforeValidator) and m.func is parse_duration for m in field.metadata)


def scheduler_entries(config: SchedulerConfig) -> dict[str, str]:
    """Each field of the config; the priority weights each on a line of its own, as scontrol's PriorityWeight*."""
    entries = {}
    for name, field in SchedulerConfig.model_fields.items():
        v = getattr(config, name)
        if isinstance(v, PriorityWeights):
            entries.update({f"PriorityWeight{camel(k)}": value(w) for k, w in v.model_dump().items()})
        else:
            entries[SLURM_NAMES.get(name) or camel(name)] = value(v, _is_seconds(field))
    return entries


def scheduling(plane: ControlPlane) -> str:
    """The policy that decides the cycles, for the server's `listening` line: `policy backfill`, or `policy file F
    (backfill when it fails)`."""
    config = plane.scheduler.config
    if config.policy_file:
        return f"policy file {config.policy_file} ({config.policy} when it fails)"
    return f"policy {config.policy}"


def running_config(plane: ControlPlane) -> list[tuple[str, str]]:
    """The controller's configuration: the scheduler's, the runs', and what its server was started with
    (plane.served, set by vipu-server)."""
    settings, pod = plane.settings, plane.pod
    entries = {
        **scheduler_entries(plane.scheduler.config),
        "Version": __version__,
        "Pod": pod.name,
        "PodIpus": value(pod.ipus),
        "StateSaveLocation": value(settings.state_dir),
        "KillWait": value(settings.kill_wait_s, seconds=True),
        "OutputDirs": value(tuple(map(str, settings.output_dirs))),
        "ModelledTimeScale": value(settings.modelled_time_scale),
        "AccessKeys": "required (--secure)" if plane.secure else "not checked: every caller is trusted",
        "JobsReachItAt": f"{plane.api_host}:{plane.api_port}",
        "DeviceServiceAddress": value(plane.device_address),
        "TensorMemory": f"{plane.sessions.memory.budget} bytes",  # a default of its own (a share of the RAM)
        **{key: value(v) for key, v in plane.served.items()},
    }
    return sorted(entries.items())

