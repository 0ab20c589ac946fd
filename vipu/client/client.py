"""Client: the controller's API as Python methods, for scripts that would otherwise drive the CLI. Replies are the
API's own messages (vipu/v1, protos/vipu/v1); every failure is one ApiError. docs/client.md shows it in use."""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterable, Iterator

from vipu.client.caller import DEFAULT_TIMEOUT_S, Caller, new_request_id
from vipu.client.messages import duration, timestamp, to_message
from vipu.client.settings import bad, resolve
from vipu.errors import elided
from vipu.v1 import job_pb2 as j
from vipu.v1 import job_spec_pb2 as s
from vipu.v1 import partition_pb2 as p

__all__ = ["Client", "new_request_id"]


class Client(Caller):
    """A connection to one V-IPU controller.

    `Client.connect()` finds the controller as the vipu CLI does (arguments, else VIPU_CLI_* variables, else the
    config file, else localhost:8090); `timeout` bounds each call, and how long a create is retried while the
    controller is unreachable. Use it as a context manager, or close() it, to close its channel."""

    @classmethod
    def connect(cls, host: str | None = None, port: int | None = None, user: str | None = None,
                access_key: str | None = None, tls_ca: str | None = None,
                timeout: float = DEFAULT_TIMEOUT_S) -> Client:
        return cls(resolve(host, port, user, access_key, tls_ca), timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def version(self) -> p.VersionInfo:
        return self.call(self.partition_service.GetVersion, p.GetVersionRequest())

    # -- jobs -------------------------------------------------------------------------------------------------
    def submit(self, spec: str | bytes | dict | s.JobSpec, *, source: str = "",
               overrides: dict | s.JobSpec | None = None, request_id: str | None = None) -> j.SubmitJobResponse:
        """Queue a job spec (YAML or JSON text, a dict of its fields, or a typed JobSpec) with `overrides` (a JobSpec,
        or a dict of its fields with times in seconds) replacing its fields; the reply's job_ids are the jobs queued
        (an array's tasks). Retried with the same request id while the controller is unreachable, so it never queues
        twice (`duplicate` says a retry found the first submit's jobs)."""
        request = j.SubmitJobRequest(source=source, request_id=request_id or new_request_id())
        if isinstance(spec, s.JobSpec):
            request.job_spec.CopyFrom(spec)
        else:
            import json  # here: the CLI sends text, and its listings need none of it

            request.spec = json.dumps(spec).encode() if isinstance(spec, dict) else \
                spec.encode() if isinstance(spec, str) else spec
        if overrides:
            request.overrides.CopyFrom(overrides if isinstance(overrides, s.JobSpec)
                                       else to_message(overrides, s.JobSpec()))
        return self.call(self.job_service.SubmitJob, request, retry=True)

    def jobs(self, *, users: Iterable[str] = (), states: Iterable[str] = (), ids: Iterable[int] = (),
             brief: bool = False, me: bool = False) -> Iterator[j.Job]:
        """The active jobs (squeue), in the queue's order, a page at a time; `brief` leaves out each job's spec and
        detail; `me` adds the caller as the controller knows it to `users` (squeue --me)."""
        request = j.ListJobsRequest(users=users, states=states, ids=ids, brief=brief, me=me)
        return self.items(self.job_service.ListJobs, request)

    def job(self, job_id: int) -> j.Job:
        return self.call(self.job_service.GetJob, j.GetJobRequest(id=job_id))

    def cancel(self, *ids: int, users: Iterable[str] = (), names: Iterable[str] = (), states: Iterable[str] = (),
               partitions: Iterable[str] = (), qos: Iterable[str] = (), accounts: Iterable[str] = (),
               me: bool = False, signal: int = 0, single: bool = False) -> list[j.Job]:
        """Cancel jobs as scancel does (an array job's id: every task, unless `single`): the filters narrow the ids
        given, or choose among the caller's active jobs without ids; `signal` sends that signal to running programs
        instead. The reply lists the jobs it ended (or signalled)."""
        request = j.CancelJobsRequest(ids=ids, users=users, names=names, states=states, partitions=partitions,
                                      qos=qos, accounts=accounts, me=me, signal=signal, single=single)
        return list(self.call(self.job_service.CancelJobs, request).jobs)

    def hold(self, *ids: int, admin: bool = False, single: bool = False) -> list[j.Job]:
        return list(self.call(self.job_service.HoldJobs, j.JobIdsRequest(ids=ids, admin=admin, single=single)).jobs)

    def release(self, *ids: int, single: bool = False) -> list[j.Job]:
        return list(self.call(self.job_service.ReleaseJobs, j.JobIdsRequest(ids=ids, single=single)).jobs)

    def requeue(self, *ids: int, single: bool = False) -> list[j.Job]:
        return list(self.call(self.job_service.RequeueJobs, j.JobIdsRequest(ids=ids, single=single)).jobs)

    def update(self, job_id: int, *, time_limit: float | str | None = None, time_limit_add: float | None = None,
               qos: str | None = None, nice: int | None = None, dependency: str | None = None, name: str | None = None,
               array_task_throttle: int | None = None, begin: str | float | None = None, priority: int | None = None,
               single: bool = False) -> list[j.Job]:
        """Change a job as scontrol update does (the fields given; an array job's id: its tasks not ended, unless
        `single`). `time_limit`: seconds, or "UNLIMITED" (the longest its QOS allows); `time_limit_add`: seconds
        added (negative: taken off); `begin`: text as sbatch --begin takes it (16:00, now+1hour), or seconds since
        the epoch. The reply lists the jobs changed."""
        request = j.UpdateJobRequest(id=job_id, single=single)
        given = {"qos": qos, "nice": nice, "dependency": dependency, "name": name,
                 "array_task_throttle": array_task_throttle, "priority": priority}
        for field, value in given.items():
            if value is not None:
                with _argument(field, value, "a value of the field's type and range (docs/client.md)"):
                    setattr(request, field, value)
        if isinstance(time_limit, str) and time_limit.strip().upper() in ("UNLIMITED", "INFINITE"):
            request.time_limit_unlimited = True
        elif time_limit is not None:
            with _argument("time_limit", time_limit, 'seconds (a finite number) or "UNLIMITED"'):
                request.time_limit.CopyFrom(duration(_finite(float(time_limit))))
        if time_limit_add is not None:
            with _argument("time_limit_add", time_limit_add, "seconds (a finite number)"):
                request.time_limit_add.CopyFrom(duration(_finite(float(time_limit_add))))
        if isinstance(begin, str):
            request.begin = begin
        elif begin is not None:
            with _argument("begin", begin, "text as sbatch --begin takes it, or seconds since the epoch"):
                request.begin_time.CopyFrom(timestamp(_finite(float(begin))))
        return list(self.call(self.job_service.UpdateJob, request).jobs)

    def history(self, *, users: Iterable[str] = (), states: Iterable[str] = (), ids: Iterable[int] = (),
                limit: int = 0, duplicates: bool = False, brief: bool = False) -> Iterator[j.Job]:
        """Ended jobs (sacct) in the order they ended; `duplicates`: each earlier run of a requeued job too."""
        request = j.HistoryRequest(users=users, states=states, ids=ids, limit=limit, duplicates=duplicates,
                                   brief=brief)
        return self.items(self.job_service.History, request)

    def logs(self, job_id: int) -> j.JobLogsResponse:
        return self.call(self.job_service.JobLogs, j.JobLogsRequest(id=job_id))

    def info(self) -> j.ClusterInfoResponse:
        return self.call(self.job_service.ClusterInfo, j.ClusterInfoRequest())

    def priorities(self, *ids: int) -> Iterator[j.PriorityFactors]:
        """Each pending job's priority factors (sprio); none named: every pending job."""
        return self.items(self.job_service.Priorities, j.PrioritiesRequest(ids=ids))

    # -- partitions -------------------------------------------------------------------------------------------
    def partitions(self) -> Iterator[p.Partition]:
        return self.items(self.partition_service.ListPartitions, p.ListPartitionsRequest())

    def partition(self, name: str, *, gcd: int | None = None, ipu_configs: bool = False) -> p.PartitionView:
        return self.call(self.partition_service.GetPartition,
                         p.GetPartitionRequest(name=name, gcd=gcd, ipu_configs=ipu_configs))

    def create_partition(self, name: str, size: int, *, num_gcds: int | None = None,
                         gcd_sync_replicas: int | None = None, reconfigurable: bool = False, allocation: str = "",
                         request_id: str | None = None) -> p.Partition:
        """Retried with the same request id while the controller is unreachable: it creates the partition once."""
        request = p.CreatePartitionRequest(name=name, size=size, num_gcds=num_gcds,
                                           gcd_sync_replicas=gcd_sync_replicas, reconfigurable=reconfigurable,
                                           allocation=allocation, request_id=request_id or new_request_id())
        return self.call(self.partition_service.CreatePartition, request, retry=True)

    def remove_partition(self, name: str, *, force: bool = False) -> p.Partition:
        return self.call(self.partition_service.RemovePartition, p.RemovePartitionRequest(name=name, force=force))

    def allocations(self) -> Iterator[p.Allocation]:
        return self.items(self.partition_service.ListAllocations, p.ListAllocationsRequest())

    def ipus(self) -> Iterator[p.Ipu]:
        return self.items(self.partition_service.ListIpus, p.ListIpusRequest())


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


@contextmanager
def _argument(name: str, value: object, give: str) -> Iterator[None]:
    """A value the request cannot carry is the caller's mistake: ApiError naming the argument, as every failure is."""
    try:
        yield
    except (ValueError, TypeError, OverflowError) as e:
        raise bad(elided(f"update(): {name}={value!r} cannot be sent ({e}); give {give}")) from None
