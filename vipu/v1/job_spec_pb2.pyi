import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobSpec(_message.Message):
    __slots__ = ("name", "ipus", "time_limit", "time_limit_unlimited", "qos", "nice", "user", "account", "dependency", "array", "hold", "begin_time", "begin_after", "begin_text", "requeue", "output", "error", "allocation", "workload", "submit_dir", "nodelist", "exclude", "comment", "submit_line")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_UNLIMITED_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    NICE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TIME_FIELD_NUMBER: _ClassVar[int]
    BEGIN_AFTER_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TEXT_FIELD_NUMBER: _ClassVar[int]
    REQUEUE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_DIR_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_LINE_FIELD_NUMBER: _ClassVar[int]
    name: str
    ipus: int
    time_limit: _duration_pb2.Duration
    time_limit_unlimited: bool
    qos: str
    nice: int
    user: str
    account: str
    dependency: str
    array: str
    hold: bool
    begin_time: _timestamp_pb2.Timestamp
    begin_after: _duration_pb2.Duration
    begin_text: str
    requeue: bool
    output: str
    error: str
    allocation: str
    workload: Workload
    submit_dir: str
    nodelist: str
    exclude: str
    comment: str
    submit_line: str
    def __init__(self, name: _Optional[str] = ..., ipus: _Optional[int] = ..., time_limit: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., time_limit_unlimited: _Optional[bool] = ..., qos: _Optional[str] = ..., nice: _Optional[int] = ..., user: _Optional[str] = ..., account: _Optional[str] = ..., dependency: _Optional[str] = ..., array: _Optional[str] = ..., hold: _Optional[bool] = ..., begin_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., begin_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., begin_text: _Optional[str] = ..., requeue: _Optional[bool] = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., allocation: _Optional[str] = ..., workload: _Optional[_Union[Workload, _Mapping]] = ..., submit_dir: _Optional[str] = ..., nodelist: _Optional[str] = ..., exclude: _Optional[str] = ..., comment: _Optional[str] = ..., submit_line: _Optional[str] = ...) -> None: ...

class Workload(_message.Message):
    __slots__ = ("sleep", "hold", "train", "command", "other")
    SLEEP_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    TRAIN_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    OTHER_FIELD_NUMBER: _ClassVar[int]
    sleep: SleepWorkload
    hold: HoldWorkload
    train: TrainWorkload
    command: CommandWorkload
    other: _struct_pb2.Struct
    def __init__(self, sleep: _Optional[_Union[SleepWorkload, _Mapping]] = ..., hold: _Optional[_Union[HoldWorkload, _Mapping]] = ..., train: _Optional[_Union[TrainWorkload, _Mapping]] = ..., command: _Optional[_Union[CommandWorkload, _Mapping]] = ..., other: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class SleepWorkload(_message.Message):
    __slots__ = ("duration", "exit_code")
    DURATION_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    exit_code: int
    def __init__(self, duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., exit_code: _Optional[int] = ...) -> None: ...

class HoldWorkload(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TrainWorkload(_message.Message):
    __slots__ = ("model", "layout", "optimizer", "master_weights", "steps", "learning_rate", "seed", "execute", "synthetic_data")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    MASTER_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    LEARNING_RATE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    EXECUTE_FIELD_NUMBER: _ClassVar[int]
    SYNTHETIC_DATA_FIELD_NUMBER: _ClassVar[int]
    model: Model
    layout: Layout
    optimizer: str
    master_weights: bool
    steps: int
    learning_rate: float
    seed: int
    execute: bool
    synthetic_data: bool
    def __init__(self, model: _Optional[_Union[Model, _Mapping]] = ..., layout: _Optional[_Union[Layout, _Mapping]] = ..., optimizer: _Optional[str] = ..., master_weights: _Optional[bool] = ..., steps: _Optional[int] = ..., learning_rate: _Optional[float] = ..., seed: _Optional[int] = ..., execute: _Optional[bool] = ..., synthetic_data: _Optional[bool] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("mlp", "transformer", "resnet50")
    MLP_FIELD_NUMBER: _ClassVar[int]
    TRANSFORMER_FIELD_NUMBER: _ClassVar[int]
    RESNET50_FIELD_NUMBER: _ClassVar[int]
    mlp: MlpModel
    transformer: TransformerModel
    resnet50: ConvNetModel
    def __init__(self, mlp: _Optional[_Union[MlpModel, _Mapping]] = ..., transformer: _Optional[_Union[TransformerModel, _Mapping]] = ..., resnet50: _Optional[_Union[ConvNetModel, _Mapping]] = ...) -> None: ...

class MlpModel(_message.Message):
    __slots__ = ("dtype", "layers", "hidden", "inputs", "outputs")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    dtype: str
    layers: int
    hidden: int
    inputs: int
    outputs: int
    def __init__(self, dtype: _Optional[str] = ..., layers: _Optional[int] = ..., hidden: _Optional[int] = ..., inputs: _Optional[int] = ..., outputs: _Optional[int] = ...) -> None: ...

class TransformerModel(_message.Message):
    __slots__ = ("dtype", "layers", "hidden", "heads", "seq_len", "vocab", "ffn_multiplier", "mask_tokens", "sequences_per_pack")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    HEADS_FIELD_NUMBER: _ClassVar[int]
    SEQ_LEN_FIELD_NUMBER: _ClassVar[int]
    VOCAB_FIELD_NUMBER: _ClassVar[int]
    FFN_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    MASK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCES_PER_PACK_FIELD_NUMBER: _ClassVar[int]
    dtype: str
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    ffn_multiplier: int
    mask_tokens: int
    sequences_per_pack: float
    def __init__(self, dtype: _Optional[str] = ..., layers: _Optional[int] = ..., hidden: _Optional[int] = ..., heads: _Optional[int] = ..., seq_len: _Optional[int] = ..., vocab: _Optional[int] = ..., ffn_multiplier: _Optional[int] = ..., mask_tokens: _Optional[int] = ..., sequences_per_pack: _Optional[float] = ...) -> None: ...

class ConvNetModel(_message.Message):
    __slots__ = ("dtype", "batch_norm_replicas")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    BATCH_NORM_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    dtype: str
    batch_norm_replicas: int
    def __init__(self, dtype: _Optional[str] = ..., batch_norm_replicas: _Optional[int] = ...) -> None: ...

class Layout(_message.Message):
    __slots__ = ("t", "p", "r", "micro_batch", "micro_batches", "device_iterations", "schedule", "recompute", "rts", "offload_optimizer", "phased", "t2", "io_tiles", "available_memory_proportion", "layers_per_stage", "gradient_reduction", "gradient_buffer_bytes")
    T_FIELD_NUMBER: _ClassVar[int]
    P_FIELD_NUMBER: _ClassVar[int]
    R_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    RTS_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    PHASED_FIELD_NUMBER: _ClassVar[int]
    T2_FIELD_NUMBER: _ClassVar[int]
    IO_TILES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_MEMORY_PROPORTION_FIELD_NUMBER: _ClassVar[int]
    LAYERS_PER_STAGE_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_REDUCTION_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_BUFFER_BYTES_FIELD_NUMBER: _ClassVar[int]
    t: int
    p: int
    r: int
    micro_batch: int
    micro_batches: int
    device_iterations: int
    schedule: str
    recompute: bool
    rts: bool
    offload_optimizer: bool
    phased: bool
    t2: int
    io_tiles: int
    available_memory_proportion: float
    layers_per_stage: _containers.RepeatedScalarFieldContainer[int]
    gradient_reduction: str
    gradient_buffer_bytes: int
    def __init__(self, t: _Optional[int] = ..., p: _Optional[int] = ..., r: _Optional[int] = ..., micro_batch: _Optional[int] = ..., micro_batches: _Optional[int] = ..., device_iterations: _Optional[int] = ..., schedule: _Optional[str] = ..., recompute: _Optional[bool] = ..., rts: _Optional[bool] = ..., offload_optimizer: _Optional[bool] = ..., phased: _Optional[bool] = ..., t2: _Optional[int] = ..., io_tiles: _Optional[int] = ..., available_memory_proportion: _Optional[float] = ..., layers_per_stage: _Optional[_Iterable[int]] = ..., gradient_reduction: _Optional[str] = ..., gradient_buffer_bytes: _Optional[int] = ...) -> None: ...

class CommandWorkload(_message.Message):
    __slots__ = ("script", "args", "submit_dir", "chdir", "environment", "open_mode", "signal")
    class EnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SCRIPT_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_DIR_FIELD_NUMBER: _ClassVar[int]
    CHDIR_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    OPEN_MODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    script: str
    args: _containers.RepeatedScalarFieldContainer[str]
    submit_dir: str
    chdir: str
    environment: _containers.ScalarMap[str, str]
    open_mode: str
    signal: str
    def __init__(self, script: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., submit_dir: _Optional[str] = ..., chdir: _Optional[str] = ..., environment: _Optional[_Mapping[str, str]] = ..., open_mode: _Optional[str] = ..., signal: _Optional[str] = ...) -> None: ...
