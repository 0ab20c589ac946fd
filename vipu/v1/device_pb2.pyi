from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Memory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SRAM: _ClassVar[Memory]
    STREAMING: _ClassVar[Memory]

class CollectiveOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALLREDUCE: _ClassVar[CollectiveOp]
    REDUCE_SCATTER: _ClassVar[CollectiveOp]
    ALL_GATHER: _ClassVar[CollectiveOp]
    BROADCAST: _ClassVar[CollectiveOp]
SRAM: Memory
STREAMING: Memory
ALLREDUCE: CollectiveOp
REDUCE_SCATTER: CollectiveOp
ALL_GATHER: CollectiveOp
BROADCAST: CollectiveOp

class Array(_message.Message):
    __slots__ = ("dtype", "shape", "data")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    dtype: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    data: bytes
    def __init__(self, dtype: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ..., data: _Optional[bytes] = ...) -> None: ...

class IpuArray(_message.Message):
    __slots__ = ("ipu", "array")
    IPU_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    ipu: int
    array: Array
    def __init__(self, ipu: _Optional[int] = ..., array: _Optional[_Union[Array, _Mapping]] = ...) -> None: ...

class AttachRequest(_message.Message):
    __slots__ = ("instance_index", "num_instances", "ipus_per_replica")
    INSTANCE_INDEX_FIELD_NUMBER: _ClassVar[int]
    NUM_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    IPUS_PER_REPLICA_FIELD_NUMBER: _ClassVar[int]
    instance_index: int
    num_instances: int
    ipus_per_replica: int
    def __init__(self, instance_index: _Optional[int] = ..., num_instances: _Optional[int] = ..., ipus_per_replica: _Optional[int] = ...) -> None: ...

class AttachResponse(_message.Message):
    __slots__ = ("partition", "size", "first_ipu", "pod", "ipus_per_machine", "tiles_per_ipu", "sram_bytes_per_ipu", "streaming_memory_bytes_per_machine", "job_id", "run")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    FIRST_IPU_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    IPUS_PER_MACHINE_FIELD_NUMBER: _ClassVar[int]
    TILES_PER_IPU_FIELD_NUMBER: _ClassVar[int]
    SRAM_BYTES_PER_IPU_FIELD_NUMBER: _ClassVar[int]
    STREAMING_MEMORY_BYTES_PER_MACHINE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    partition: str
    size: int
    first_ipu: int
    pod: str
    ipus_per_machine: int
    tiles_per_ipu: int
    sram_bytes_per_ipu: int
    streaming_memory_bytes_per_machine: int
    job_id: int
    run: int
    def __init__(self, partition: _Optional[str] = ..., size: _Optional[int] = ..., first_ipu: _Optional[int] = ..., pod: _Optional[str] = ..., ipus_per_machine: _Optional[int] = ..., tiles_per_ipu: _Optional[int] = ..., sram_bytes_per_ipu: _Optional[int] = ..., streaming_memory_bytes_per_machine: _Optional[int] = ..., job_id: _Optional[int] = ..., run: _Optional[int] = ...) -> None: ...

class PutTensorsRequest(_message.Message):
    __slots__ = ("name", "tensors", "memory")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    name: str
    tensors: _containers.RepeatedCompositeFieldContainer[IpuArray]
    memory: Memory
    def __init__(self, name: _Optional[str] = ..., tensors: _Optional[_Iterable[_Union[IpuArray, _Mapping]]] = ..., memory: _Optional[_Union[Memory, str]] = ...) -> None: ...

class PutTensorsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TensorsRequest(_message.Message):
    __slots__ = ("name", "ipus")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    ipus: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., ipus: _Optional[_Iterable[int]] = ...) -> None: ...

class GetTensorsResponse(_message.Message):
    __slots__ = ("tensors",)
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    tensors: _containers.RepeatedCompositeFieldContainer[IpuArray]
    def __init__(self, tensors: _Optional[_Iterable[_Union[IpuArray, _Mapping]]] = ...) -> None: ...

class FreeTensorsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReserveRequest(_message.Message):
    __slots__ = ("name", "bytes")
    class BytesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    bytes: _containers.ScalarMap[int, int]
    def __init__(self, name: _Optional[str] = ..., bytes: _Optional[_Mapping[int, int]] = ...) -> None: ...

class ReserveResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ComputeSetRequest(_message.Message):
    __slots__ = ("flops", "dtype", "vector_cycles")
    class FlopsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: float
        def __init__(self, key: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...
    class VectorCyclesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: float
        def __init__(self, key: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_CYCLES_FIELD_NUMBER: _ClassVar[int]
    flops: _containers.ScalarMap[int, float]
    dtype: str
    vector_cycles: _containers.ScalarMap[int, float]
    def __init__(self, flops: _Optional[_Mapping[int, float]] = ..., dtype: _Optional[str] = ..., vector_cycles: _Optional[_Mapping[int, float]] = ...) -> None: ...

class ChargedResponse(_message.Message):
    __slots__ = ("virtual_s",)
    VIRTUAL_S_FIELD_NUMBER: _ClassVar[int]
    virtual_s: float
    def __init__(self, virtual_s: _Optional[float] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ("ipus",)
    IPUS_FIELD_NUMBER: _ClassVar[int]
    ipus: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ipus: _Optional[_Iterable[int]] = ...) -> None: ...

class CollectiveRequest(_message.Message):
    __slots__ = ("op", "name", "groups", "tensors", "root", "sequence", "timeout_s")
    OP_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    op: CollectiveOp
    name: str
    groups: _containers.RepeatedCompositeFieldContainer[Group]
    tensors: _containers.RepeatedCompositeFieldContainer[IpuArray]
    root: int
    sequence: int
    timeout_s: float
    def __init__(self, op: _Optional[_Union[CollectiveOp, str]] = ..., name: _Optional[str] = ..., groups: _Optional[_Iterable[_Union[Group, _Mapping]]] = ..., tensors: _Optional[_Iterable[_Union[IpuArray, _Mapping]]] = ..., root: _Optional[int] = ..., sequence: _Optional[int] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class CollectiveResponse(_message.Message):
    __slots__ = ("tensors", "virtual_s")
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_S_FIELD_NUMBER: _ClassVar[int]
    tensors: _containers.RepeatedCompositeFieldContainer[IpuArray]
    virtual_s: float
    def __init__(self, tensors: _Optional[_Iterable[_Union[IpuArray, _Mapping]]] = ..., virtual_s: _Optional[float] = ...) -> None: ...

class SendRequest(_message.Message):
    __slots__ = ("name", "tensors", "dst", "sequence")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    tensors: _containers.RepeatedCompositeFieldContainer[IpuArray]
    dst: _containers.RepeatedScalarFieldContainer[int]
    sequence: int
    def __init__(self, name: _Optional[str] = ..., tensors: _Optional[_Iterable[_Union[IpuArray, _Mapping]]] = ..., dst: _Optional[_Iterable[int]] = ..., sequence: _Optional[int] = ...) -> None: ...

class RecvRequest(_message.Message):
    __slots__ = ("name", "src", "dst", "sequence", "timeout_s")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    name: str
    src: _containers.RepeatedScalarFieldContainer[int]
    dst: _containers.RepeatedScalarFieldContainer[int]
    sequence: int
    timeout_s: float
    def __init__(self, name: _Optional[str] = ..., src: _Optional[_Iterable[int]] = ..., dst: _Optional[_Iterable[int]] = ..., sequence: _Optional[int] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class RecvResponse(_message.Message):
    __slots__ = ("tensors",)
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    tensors: _containers.RepeatedCompositeFieldContainer[IpuArray]
    def __init__(self, tensors: _Optional[_Iterable[_Union[IpuArray, _Mapping]]] = ...) -> None: ...

class ReportStepRequest(_message.Message):
    __slots__ = ("instance_index", "step", "losses", "timeout_s")
    INSTANCE_INDEX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    LOSSES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    instance_index: int
    step: int
    losses: Array
    timeout_s: float
    def __init__(self, instance_index: _Optional[int] = ..., step: _Optional[int] = ..., losses: _Optional[_Union[Array, _Mapping]] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class ReportStepResponse(_message.Message):
    __slots__ = ("report_json",)
    REPORT_JSON_FIELD_NUMBER: _ClassVar[int]
    report_json: str
    def __init__(self, report_json: _Optional[str] = ...) -> None: ...
