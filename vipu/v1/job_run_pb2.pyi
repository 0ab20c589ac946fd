import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobDetail(_message.Message):
    __slots__ = ("first_ipu", "history", "priority", "request_id", "recovery", "preemption", "ended_by")
    FIRST_IPU_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    ENDED_BY_FIELD_NUMBER: _ClassVar[int]
    first_ipu: int
    history: _containers.RepeatedCompositeFieldContainer[JobStateChange]
    priority: JobPriority
    request_id: str
    recovery: str
    preemption: str
    ended_by: str
    def __init__(self, first_ipu: _Optional[int] = ..., history: _Optional[_Iterable[_Union[JobStateChange, _Mapping]]] = ..., priority: _Optional[_Union[JobPriority, _Mapping]] = ..., request_id: _Optional[str] = ..., recovery: _Optional[str] = ..., preemption: _Optional[str] = ..., ended_by: _Optional[str] = ...) -> None: ...

class JobStateChange(_message.Message):
    __slots__ = ("state", "at")
    STATE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    state: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, state: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class JobPriority(_message.Message):
    __slots__ = ("job_id", "user", "total", "age", "fairshare", "job_size", "qos", "nice")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    AGE_FIELD_NUMBER: _ClassVar[int]
    FAIRSHARE_FIELD_NUMBER: _ClassVar[int]
    JOB_SIZE_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    NICE_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    user: str
    total: float
    age: float
    fairshare: float
    job_size: float
    qos: float
    nice: int
    def __init__(self, job_id: _Optional[int] = ..., user: _Optional[str] = ..., total: _Optional[float] = ..., age: _Optional[float] = ..., fairshare: _Optional[float] = ..., job_size: _Optional[float] = ..., qos: _Optional[float] = ..., nice: _Optional[int] = ...) -> None: ...

class RunSummary(_message.Message):
    __slots__ = ("run", "result", "error", "ended", "environment", "earlier_runs", "modelled", "losses", "output", "node", "failure", "steps_reported", "ipu_usage", "emulated_step_s", "usage_legend", "name", "emulated_step")
    RUN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    EARLIER_RUNS_FIELD_NUMBER: _ClassVar[int]
    MODELLED_FIELD_NUMBER: _ClassVar[int]
    LOSSES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    STEPS_REPORTED_FIELD_NUMBER: _ClassVar[int]
    IPU_USAGE_FIELD_NUMBER: _ClassVar[int]
    EMULATED_STEP_S_FIELD_NUMBER: _ClassVar[int]
    USAGE_LEGEND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EMULATED_STEP_FIELD_NUMBER: _ClassVar[int]
    run: int
    result: TrainingResult
    error: str
    ended: str
    environment: _containers.RepeatedCompositeFieldContainer[Environment]
    earlier_runs: _containers.RepeatedScalarFieldContainer[str]
    modelled: ModelledSteps
    losses: _containers.RepeatedScalarFieldContainer[float]
    output: str
    node: str
    failure: str
    steps_reported: int
    ipu_usage: _containers.RepeatedCompositeFieldContainer[IpuUsage]
    emulated_step_s: float
    usage_legend: str
    name: str
    emulated_step: _duration_pb2.Duration
    def __init__(self, run: _Optional[int] = ..., result: _Optional[_Union[TrainingResult, _Mapping]] = ..., error: _Optional[str] = ..., ended: _Optional[str] = ..., environment: _Optional[_Iterable[_Union[Environment, _Mapping]]] = ..., earlier_runs: _Optional[_Iterable[str]] = ..., modelled: _Optional[_Union[ModelledSteps, _Mapping]] = ..., losses: _Optional[_Iterable[float]] = ..., output: _Optional[str] = ..., node: _Optional[str] = ..., failure: _Optional[str] = ..., steps_reported: _Optional[int] = ..., ipu_usage: _Optional[_Iterable[_Union[IpuUsage, _Mapping]]] = ..., emulated_step_s: _Optional[float] = ..., usage_legend: _Optional[str] = ..., name: _Optional[str] = ..., emulated_step: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Environment(_message.Message):
    __slots__ = ("variables",)
    class VariablesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VARIABLES_FIELD_NUMBER: _ClassVar[int]
    variables: _containers.ScalarMap[str, str]
    def __init__(self, variables: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ModelledSteps(_message.Message):
    __slots__ = ("time_scale", "step_wall_s", "steps_run", "step_wall")
    TIME_SCALE_FIELD_NUMBER: _ClassVar[int]
    STEP_WALL_S_FIELD_NUMBER: _ClassVar[int]
    STEPS_RUN_FIELD_NUMBER: _ClassVar[int]
    STEP_WALL_FIELD_NUMBER: _ClassVar[int]
    time_scale: float
    step_wall_s: float
    steps_run: int
    step_wall: _duration_pb2.Duration
    def __init__(self, time_scale: _Optional[float] = ..., step_wall_s: _Optional[float] = ..., steps_run: _Optional[int] = ..., step_wall: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class IpuUsage(_message.Message):
    __slots__ = ("ipu", "machine", "utilisation", "sram_peak_bytes", "activation_peak_bytes", "streaming_peak_bytes")
    IPU_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    UTILISATION_FIELD_NUMBER: _ClassVar[int]
    SRAM_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVATION_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    STREAMING_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    ipu: int
    machine: int
    utilisation: float
    sram_peak_bytes: int
    activation_peak_bytes: int
    streaming_peak_bytes: int
    def __init__(self, ipu: _Optional[int] = ..., machine: _Optional[int] = ..., utilisation: _Optional[float] = ..., sram_peak_bytes: _Optional[int] = ..., activation_peak_bytes: _Optional[int] = ..., streaming_peak_bytes: _Optional[int] = ...) -> None: ...

class InstanceRun(_message.Message):
    __slots__ = ("index", "partition", "gcd", "replicas", "ipus")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    GCD_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    index: int
    partition: str
    gcd: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    ipus: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, index: _Optional[int] = ..., partition: _Optional[str] = ..., gcd: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., ipus: _Optional[_Iterable[int]] = ...) -> None: ...

class TrainingResult(_message.Message):
    __slots__ = ("model", "layout", "pod", "first_ipu", "ipus", "optimizer", "global_batch", "steps_requested", "stopped", "losses", "emulated_step_s", "throughput_samples_per_s", "predicted_step_s", "predicted_throughput_samples_per_s", "predicted_parts", "emulated_parts", "bytes_per_link_type", "wall_s", "instances", "ipu_usage", "modelled", "emulated_step", "predicted_step", "wall")
    class PredictedPartsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class EmulatedPartsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class BytesPerLinkTypeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    FIRST_IPU_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_BATCH_FIELD_NUMBER: _ClassVar[int]
    STEPS_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    LOSSES_FIELD_NUMBER: _ClassVar[int]
    EMULATED_STEP_S_FIELD_NUMBER: _ClassVar[int]
    THROUGHPUT_SAMPLES_PER_S_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_STEP_S_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_THROUGHPUT_SAMPLES_PER_S_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_PARTS_FIELD_NUMBER: _ClassVar[int]
    EMULATED_PARTS_FIELD_NUMBER: _ClassVar[int]
    BYTES_PER_LINK_TYPE_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    IPU_USAGE_FIELD_NUMBER: _ClassVar[int]
    MODELLED_FIELD_NUMBER: _ClassVar[int]
    EMULATED_STEP_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_STEP_FIELD_NUMBER: _ClassVar[int]
    WALL_FIELD_NUMBER: _ClassVar[int]
    model: str
    layout: str
    pod: str
    first_ipu: int
    ipus: int
    optimizer: str
    global_batch: int
    steps_requested: int
    stopped: bool
    losses: _containers.RepeatedScalarFieldContainer[float]
    emulated_step_s: float
    throughput_samples_per_s: float
    predicted_step_s: float
    predicted_throughput_samples_per_s: float
    predicted_parts: _containers.ScalarMap[str, float]
    emulated_parts: _containers.ScalarMap[str, float]
    bytes_per_link_type: _containers.ScalarMap[str, int]
    wall_s: float
    instances: _containers.RepeatedCompositeFieldContainer[InstanceRun]
    ipu_usage: _containers.RepeatedCompositeFieldContainer[IpuUsage]
    modelled: ModelledSteps
    emulated_step: _duration_pb2.Duration
    predicted_step: _duration_pb2.Duration
    wall: _duration_pb2.Duration
    def __init__(self, model: _Optional[str] = ..., layout: _Optional[str] = ..., pod: _Optional[str] = ..., first_ipu: _Optional[int] = ..., ipus: _Optional[int] = ..., optimizer: _Optional[str] = ..., global_batch: _Optional[int] = ..., steps_requested: _Optional[int] = ..., stopped: _Optional[bool] = ..., losses: _Optional[_Iterable[float]] = ..., emulated_step_s: _Optional[float] = ..., throughput_samples_per_s: _Optional[float] = ..., predicted_step_s: _Optional[float] = ..., predicted_throughput_samples_per_s: _Optional[float] = ..., predicted_parts: _Optional[_Mapping[str, float]] = ..., emulated_parts: _Optional[_Mapping[str, float]] = ..., bytes_per_link_type: _Optional[_Mapping[str, int]] = ..., wall_s: _Optional[float] = ..., instances: _Optional[_Iterable[_Union[InstanceRun, _Mapping]]] = ..., ipu_usage: _Optional[_Iterable[_Union[IpuUsage, _Mapping]]] = ..., modelled: _Optional[_Union[ModelledSteps, _Mapping]] = ..., emulated_step: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., predicted_step: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., wall: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
