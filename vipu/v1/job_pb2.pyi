import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from vipu.v1 import job_run_pb2 as _job_run_pb2
from vipu.v1 import job_spec_pb2 as _job_spec_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SignalTarget(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIGNAL_CHILDREN: _ClassVar[SignalTarget]
    SIGNAL_BATCH: _ClassVar[SignalTarget]
    SIGNAL_FULL: _ClassVar[SignalTarget]
SIGNAL_CHILDREN: SignalTarget
SIGNAL_BATCH: SignalTarget
SIGNAL_FULL: SignalTarget

class SubmitJobRequest(_message.Message):
    __slots__ = ("spec", "source", "overrides_json", "request_id", "validate_only", "job_spec", "overrides", "held")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    OVERRIDES_JSON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    JOB_SPEC_FIELD_NUMBER: _ClassVar[int]
    OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    spec: bytes
    source: str
    overrides_json: str
    request_id: str
    validate_only: bool
    job_spec: _job_spec_pb2.JobSpec
    overrides: _job_spec_pb2.JobSpec
    held: bool
    def __init__(self, spec: _Optional[bytes] = ..., source: _Optional[str] = ..., overrides_json: _Optional[str] = ..., request_id: _Optional[str] = ..., validate_only: _Optional[bool] = ..., job_spec: _Optional[_Union[_job_spec_pb2.JobSpec, _Mapping]] = ..., overrides: _Optional[_Union[_job_spec_pb2.JobSpec, _Mapping]] = ..., held: _Optional[bool] = ...) -> None: ...

class SubmitJobResponse(_message.Message):
    __slots__ = ("job_ids", "duplicate", "expected")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    duplicate: bool
    expected: ExpectedStart
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., duplicate: _Optional[bool] = ..., expected: _Optional[_Union[ExpectedStart, _Mapping]] = ...) -> None: ...

class ExpectedStart(_message.Message):
    __slots__ = ("start", "reason", "partition", "allocation", "ipus", "start_time", "first_ipu")
    START_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    FIRST_IPU_FIELD_NUMBER: _ClassVar[int]
    start: float
    reason: str
    partition: str
    allocation: str
    ipus: int
    start_time: _timestamp_pb2.Timestamp
    first_ipu: int
    def __init__(self, start: _Optional[float] = ..., reason: _Optional[str] = ..., partition: _Optional[str] = ..., allocation: _Optional[str] = ..., ipus: _Optional[int] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., first_ipu: _Optional[int] = ...) -> None: ...

class SubmitJobsRequest(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[SubmitJobRequest]
    def __init__(self, jobs: _Optional[_Iterable[_Union[SubmitJobRequest, _Mapping]]] = ...) -> None: ...

class SubmitJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[SubmitJobResponse]
    def __init__(self, jobs: _Optional[_Iterable[_Union[SubmitJobResponse, _Mapping]]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("id", "name", "user", "account", "qos", "state", "state_code", "reason", "ipus", "partition", "time_limit_s", "submit_time", "start_time", "end_time", "estimated_start", "exit_code", "array_job_id", "array_task_id", "dependency", "requeue_count", "held", "priority", "spec_json", "detail_json", "result_json", "admin_hold", "begin_time", "signal", "modelled", "time_limit", "submitted", "started", "ended", "expected_start", "begin", "spec", "detail", "result", "eligible", "cancelled_by_uid", "uid")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_S_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ARRAY_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_FIELD_NUMBER: _ClassVar[int]
    REQUEUE_COUNT_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_JSON_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ADMIN_HOLD_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TIME_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    MODELLED_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_START_FIELD_NUMBER: _ClassVar[int]
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_BY_UID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    user: str
    account: str
    qos: str
    state: str
    state_code: str
    reason: str
    ipus: int
    partition: str
    time_limit_s: float
    submit_time: float
    start_time: float
    end_time: float
    estimated_start: float
    exit_code: int
    array_job_id: int
    array_task_id: int
    dependency: str
    requeue_count: int
    held: bool
    priority: float
    spec_json: str
    detail_json: str
    result_json: str
    admin_hold: bool
    begin_time: float
    signal: int
    modelled: bool
    time_limit: _duration_pb2.Duration
    submitted: _timestamp_pb2.Timestamp
    started: _timestamp_pb2.Timestamp
    ended: _timestamp_pb2.Timestamp
    expected_start: _timestamp_pb2.Timestamp
    begin: _timestamp_pb2.Timestamp
    spec: _job_spec_pb2.JobSpec
    detail: _job_run_pb2.JobDetail
    result: _job_run_pb2.RunSummary
    eligible: _timestamp_pb2.Timestamp
    cancelled_by_uid: int
    uid: int
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., user: _Optional[str] = ..., account: _Optional[str] = ..., qos: _Optional[str] = ..., state: _Optional[str] = ..., state_code: _Optional[str] = ..., reason: _Optional[str] = ..., ipus: _Optional[int] = ..., partition: _Optional[str] = ..., time_limit_s: _Optional[float] = ..., submit_time: _Optional[float] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., estimated_start: _Optional[float] = ..., exit_code: _Optional[int] = ..., array_job_id: _Optional[int] = ..., array_task_id: _Optional[int] = ..., dependency: _Optional[str] = ..., requeue_count: _Optional[int] = ..., held: _Optional[bool] = ..., priority: _Optional[float] = ..., spec_json: _Optional[str] = ..., detail_json: _Optional[str] = ..., result_json: _Optional[str] = ..., admin_hold: _Optional[bool] = ..., begin_time: _Optional[float] = ..., signal: _Optional[int] = ..., modelled: _Optional[bool] = ..., time_limit: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., submitted: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expected_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., begin: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., spec: _Optional[_Union[_job_spec_pb2.JobSpec, _Mapping]] = ..., detail: _Optional[_Union[_job_run_pb2.JobDetail, _Mapping]] = ..., result: _Optional[_Union[_job_run_pb2.RunSummary, _Mapping]] = ..., eligible: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cancelled_by_uid: _Optional[int] = ..., uid: _Optional[int] = ...) -> None: ...

class JobLogsRequest(_message.Message):
    __slots__ = ("id", "follow", "after", "partial")
    ID_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    id: int
    follow: bool
    after: LogMark
    partial: bool
    def __init__(self, id: _Optional[int] = ..., follow: _Optional[bool] = ..., after: _Optional[_Union[LogMark, _Mapping]] = ..., partial: _Optional[bool] = ...) -> None: ...

class LogMark(_message.Message):
    __slots__ = ("run", "offset", "steps", "opened", "closed", "mid_line")
    RUN_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    OPENED_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    MID_LINE_FIELD_NUMBER: _ClassVar[int]
    run: int
    offset: int
    steps: int
    opened: bool
    closed: bool
    mid_line: bool
    def __init__(self, run: _Optional[int] = ..., offset: _Optional[int] = ..., steps: _Optional[int] = ..., opened: _Optional[bool] = ..., closed: _Optional[bool] = ..., mid_line: _Optional[bool] = ...) -> None: ...

class JobLogsResponse(_message.Message):
    __slots__ = ("lines", "record_json", "mark", "job")
    LINES_FIELD_NUMBER: _ClassVar[int]
    RECORD_JSON_FIELD_NUMBER: _ClassVar[int]
    MARK_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedScalarFieldContainer[str]
    record_json: str
    mark: LogMark
    job: Job
    def __init__(self, lines: _Optional[_Iterable[str]] = ..., record_json: _Optional[str] = ..., mark: _Optional[_Union[LogMark, _Mapping]] = ..., job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("users", "states", "ids", "brief", "page_size", "page_token", "me", "placement")
    USERS_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ME_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[str]
    ids: _containers.RepeatedScalarFieldContainer[int]
    brief: bool
    page_size: int
    page_token: str
    me: bool
    placement: bool
    def __init__(self, users: _Optional[_Iterable[str]] = ..., states: _Optional[_Iterable[str]] = ..., ids: _Optional[_Iterable[int]] = ..., brief: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., me: _Optional[bool] = ..., placement: _Optional[bool] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token", "total_size", "unknown_users")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_USERS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    total_size: int
    unknown_users: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ..., unknown_users: _Optional[_Iterable[str]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class JobIdsRequest(_message.Message):
    __slots__ = ("ids", "admin", "single", "hold")
    IDS_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    admin: bool
    single: bool
    hold: bool
    def __init__(self, ids: _Optional[_Iterable[int]] = ..., admin: _Optional[bool] = ..., single: _Optional[bool] = ..., hold: _Optional[bool] = ...) -> None: ...

class CancelJobsRequest(_message.Message):
    __slots__ = ("ids", "users", "single", "names", "states", "partitions", "qos", "accounts", "signal", "me", "signal_target", "brief")
    IDS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    ME_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_TARGET_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    users: _containers.RepeatedScalarFieldContainer[str]
    single: bool
    names: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[str]
    partitions: _containers.RepeatedScalarFieldContainer[str]
    qos: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    signal: int
    me: bool
    signal_target: SignalTarget
    brief: bool
    def __init__(self, ids: _Optional[_Iterable[int]] = ..., users: _Optional[_Iterable[str]] = ..., single: _Optional[bool] = ..., names: _Optional[_Iterable[str]] = ..., states: _Optional[_Iterable[str]] = ..., partitions: _Optional[_Iterable[str]] = ..., qos: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., signal: _Optional[int] = ..., me: _Optional[bool] = ..., signal_target: _Optional[_Union[SignalTarget, str]] = ..., brief: _Optional[bool] = ...) -> None: ...

class UpdateJobRequest(_message.Message):
    __slots__ = ("id", "single", "time_limit_s", "time_limit_add_s", "qos", "nice", "dependency", "name", "array_task_throttle", "begin", "priority", "time_limit", "time_limit_add", "time_limit_unlimited", "begin_time", "nodelist", "exclude")
    ID_FIELD_NUMBER: _ClassVar[int]
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_S_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_ADD_S_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    NICE_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASK_THROTTLE_FIELD_NUMBER: _ClassVar[int]
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_ADD_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_UNLIMITED_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TIME_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    id: int
    single: bool
    time_limit_s: float
    time_limit_add_s: float
    qos: str
    nice: int
    dependency: str
    name: str
    array_task_throttle: int
    begin: str
    priority: int
    time_limit: _duration_pb2.Duration
    time_limit_add: _duration_pb2.Duration
    time_limit_unlimited: bool
    begin_time: _timestamp_pb2.Timestamp
    nodelist: str
    exclude: str
    def __init__(self, id: _Optional[int] = ..., single: _Optional[bool] = ..., time_limit_s: _Optional[float] = ..., time_limit_add_s: _Optional[float] = ..., qos: _Optional[str] = ..., nice: _Optional[int] = ..., dependency: _Optional[str] = ..., name: _Optional[str] = ..., array_task_throttle: _Optional[int] = ..., begin: _Optional[str] = ..., priority: _Optional[int] = ..., time_limit: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., time_limit_add: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., time_limit_unlimited: _Optional[bool] = ..., begin_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., nodelist: _Optional[str] = ..., exclude: _Optional[str] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ("users", "states", "limit", "brief", "duplicates", "ids", "page_size", "page_token", "ended_since", "me")
    USERS_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ENDED_SINCE_FIELD_NUMBER: _ClassVar[int]
    ME_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    brief: bool
    duplicates: bool
    ids: _containers.RepeatedScalarFieldContainer[int]
    page_size: int
    page_token: str
    ended_since: _timestamp_pb2.Timestamp
    me: bool
    def __init__(self, users: _Optional[_Iterable[str]] = ..., states: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ..., brief: _Optional[bool] = ..., duplicates: _Optional[bool] = ..., ids: _Optional[_Iterable[int]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., ended_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., me: _Optional[bool] = ...) -> None: ...

class ClusterInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Pod64Info(_message.Message):
    __slots__ = ("ild", "idle", "allocated", "failed", "total", "drained", "draining", "completing")
    ILD_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    COMPLETING_FIELD_NUMBER: _ClassVar[int]
    ild: int
    idle: int
    allocated: int
    failed: int
    total: int
    drained: int
    draining: int
    completing: int
    def __init__(self, ild: _Optional[int] = ..., idle: _Optional[int] = ..., allocated: _Optional[int] = ..., failed: _Optional[int] = ..., total: _Optional[int] = ..., drained: _Optional[int] = ..., draining: _Optional[int] = ..., completing: _Optional[int] = ...) -> None: ...

class ClusterInfoResponse(_message.Message):
    __slots__ = ("pod", "ilds", "pending_jobs", "running_jobs", "qos", "completing_jobs", "completing_nodes")
    POD_FIELD_NUMBER: _ClassVar[int]
    ILDS_FIELD_NUMBER: _ClassVar[int]
    PENDING_JOBS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_JOBS_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    COMPLETING_JOBS_FIELD_NUMBER: _ClassVar[int]
    COMPLETING_NODES_FIELD_NUMBER: _ClassVar[int]
    pod: str
    ilds: _containers.RepeatedCompositeFieldContainer[Pod64Info]
    pending_jobs: int
    running_jobs: int
    qos: _containers.RepeatedScalarFieldContainer[str]
    completing_jobs: int
    completing_nodes: str
    def __init__(self, pod: _Optional[str] = ..., ilds: _Optional[_Iterable[_Union[Pod64Info, _Mapping]]] = ..., pending_jobs: _Optional[int] = ..., running_jobs: _Optional[int] = ..., qos: _Optional[_Iterable[str]] = ..., completing_jobs: _Optional[int] = ..., completing_nodes: _Optional[str] = ...) -> None: ...

class PrioritiesRequest(_message.Message):
    __slots__ = ("ids", "single", "page_size", "page_token")
    IDS_FIELD_NUMBER: _ClassVar[int]
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    single: bool
    page_size: int
    page_token: str
    def __init__(self, ids: _Optional[_Iterable[int]] = ..., single: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class PriorityFactors(_message.Message):
    __slots__ = ("job_id", "user", "priority", "age", "fairshare", "job_size", "qos", "nice", "array_job_id", "array_task_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    AGE_FIELD_NUMBER: _ClassVar[int]
    FAIRSHARE_FIELD_NUMBER: _ClassVar[int]
    JOB_SIZE_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    NICE_FIELD_NUMBER: _ClassVar[int]
    ARRAY_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    user: str
    priority: float
    age: float
    fairshare: float
    job_size: float
    qos: float
    nice: float
    array_job_id: int
    array_task_id: int
    def __init__(self, job_id: _Optional[int] = ..., user: _Optional[str] = ..., priority: _Optional[float] = ..., age: _Optional[float] = ..., fairshare: _Optional[float] = ..., job_size: _Optional[float] = ..., qos: _Optional[float] = ..., nice: _Optional[float] = ..., array_job_id: _Optional[int] = ..., array_task_id: _Optional[int] = ...) -> None: ...

class PrioritiesResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token", "total_size")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[PriorityFactors]
    next_page_token: str
    total_size: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[PriorityFactors, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...
