import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetVersionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VersionInfo(_message.Message):
    __slots__ = ("version", "pod", "ipus")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    version: str
    pod: str
    ipus: int
    def __init__(self, version: _Optional[str] = ..., pod: _Optional[str] = ..., ipus: _Optional[int] = ...) -> None: ...

class GetConfigRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConfigEntry(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ConfigInfo(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ConfigEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[ConfigEntry, _Mapping]]] = ...) -> None: ...

class CreatePartitionRequest(_message.Message):
    __slots__ = ("name", "size", "num_gcds", "gcd_sync_replicas", "reconfigurable", "allocation", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    NUM_GCDS_FIELD_NUMBER: _ClassVar[int]
    GCD_SYNC_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURABLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    size: int
    num_gcds: int
    gcd_sync_replicas: int
    reconfigurable: bool
    allocation: str
    request_id: str
    def __init__(self, name: _Optional[str] = ..., size: _Optional[int] = ..., num_gcds: _Optional[int] = ..., gcd_sync_replicas: _Optional[int] = ..., reconfigurable: _Optional[bool] = ..., allocation: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class StateChange(_message.Message):
    __slots__ = ("state", "at", "time")
    STATE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    state: str
    at: float
    time: _timestamp_pb2.Timestamp
    def __init__(self, state: _Optional[str] = ..., at: _Optional[float] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Partition(_message.Message):
    __slots__ = ("name", "size", "num_gcds", "gcd_sync_replicas", "reconfigurable", "sync_type", "allocation", "cluster", "owner", "state", "holder", "first_ipu", "ipus", "ilds", "ild_routing", "gw_routing", "created_at", "history", "cancelled_job", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    NUM_GCDS_FIELD_NUMBER: _ClassVar[int]
    GCD_SYNC_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURABLE_FIELD_NUMBER: _ClassVar[int]
    SYNC_TYPE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    FIRST_IPU_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    ILDS_FIELD_NUMBER: _ClassVar[int]
    ILD_ROUTING_FIELD_NUMBER: _ClassVar[int]
    GW_ROUTING_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_JOB_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    size: int
    num_gcds: int
    gcd_sync_replicas: int
    reconfigurable: bool
    sync_type: str
    allocation: str
    cluster: str
    owner: str
    state: str
    holder: str
    first_ipu: int
    ipus: _containers.RepeatedScalarFieldContainer[int]
    ilds: int
    ild_routing: str
    gw_routing: str
    created_at: float
    history: _containers.RepeatedCompositeFieldContainer[StateChange]
    cancelled_job: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., size: _Optional[int] = ..., num_gcds: _Optional[int] = ..., gcd_sync_replicas: _Optional[int] = ..., reconfigurable: _Optional[bool] = ..., sync_type: _Optional[str] = ..., allocation: _Optional[str] = ..., cluster: _Optional[str] = ..., owner: _Optional[str] = ..., state: _Optional[str] = ..., holder: _Optional[str] = ..., first_ipu: _Optional[int] = ..., ipus: _Optional[_Iterable[int]] = ..., ilds: _Optional[int] = ..., ild_routing: _Optional[str] = ..., gw_routing: _Optional[str] = ..., created_at: _Optional[float] = ..., history: _Optional[_Iterable[_Union[StateChange, _Mapping]]] = ..., cancelled_job: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetPartitionRequest(_message.Message):
    __slots__ = ("name", "ipu_configs", "gcd")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IPU_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    GCD_FIELD_NUMBER: _ClassVar[int]
    name: str
    ipu_configs: bool
    gcd: int
    def __init__(self, name: _Optional[str] = ..., ipu_configs: _Optional[bool] = ..., gcd: _Optional[int] = ...) -> None: ...

class PartitionIpu(_message.Message):
    __slots__ = ("id", "index", "ild", "row", "failed")
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ILD_FIELD_NUMBER: _ClassVar[int]
    ROW_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    id: int
    index: int
    ild: int
    row: int
    failed: bool
    def __init__(self, id: _Optional[int] = ..., index: _Optional[int] = ..., ild: _Optional[int] = ..., row: _Optional[int] = ..., failed: _Optional[bool] = ...) -> None: ...

class PartitionMachine(_message.Message):
    __slots__ = ("machine", "agent", "host", "port", "ipus")
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    machine: int
    agent: str
    host: str
    port: int
    ipus: _containers.RepeatedCompositeFieldContainer[PartitionIpu]
    def __init__(self, machine: _Optional[int] = ..., agent: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., ipus: _Optional[_Iterable[_Union[PartitionIpu, _Mapping]]] = ...) -> None: ...

class GcdView(_message.Message):
    __slots__ = ("gcd", "ipus", "environment", "ipu_config_json")
    class EnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    GCD_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    IPU_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    gcd: int
    ipus: _containers.RepeatedScalarFieldContainer[int]
    environment: _containers.ScalarMap[str, str]
    ipu_config_json: str
    def __init__(self, gcd: _Optional[int] = ..., ipus: _Optional[_Iterable[int]] = ..., environment: _Optional[_Mapping[str, str]] = ..., ipu_config_json: _Optional[str] = ...) -> None: ...

class PartitionView(_message.Message):
    __slots__ = ("partition", "machines", "ring", "gcds")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    RING_FIELD_NUMBER: _ClassVar[int]
    GCDS_FIELD_NUMBER: _ClassVar[int]
    partition: Partition
    machines: _containers.RepeatedCompositeFieldContainer[PartitionMachine]
    ring: _containers.RepeatedScalarFieldContainer[int]
    gcds: _containers.RepeatedCompositeFieldContainer[GcdView]
    def __init__(self, partition: _Optional[_Union[Partition, _Mapping]] = ..., machines: _Optional[_Iterable[_Union[PartitionMachine, _Mapping]]] = ..., ring: _Optional[_Iterable[int]] = ..., gcds: _Optional[_Iterable[_Union[GcdView, _Mapping]]] = ...) -> None: ...

class ListPartitionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListPartitionsResponse(_message.Message):
    __slots__ = ("partitions", "next_page_token", "total_size")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[Partition]
    next_page_token: str
    total_size: int
    def __init__(self, partitions: _Optional[_Iterable[_Union[Partition, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class RemovePartitionRequest(_message.Message):
    __slots__ = ("name", "force")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class ResetPartitionRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class HoldPartitionRequest(_message.Message):
    __slots__ = ("name", "holder")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    name: str
    holder: str
    def __init__(self, name: _Optional[str] = ..., holder: _Optional[str] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("name", "agents", "users", "ipus", "created_at", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    agents: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    ipus: int
    created_at: float
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., agents: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., ipus: _Optional[int] = ..., created_at: _Optional[float] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListAllocationsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAllocationsResponse(_message.Message):
    __slots__ = ("allocations", "next_page_token", "total_size")
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    allocations: _containers.RepeatedCompositeFieldContainer[Allocation]
    next_page_token: str
    total_size: int
    def __init__(self, allocations: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class Ipu(_message.Message):
    __slots__ = ("id", "machine", "index", "ild", "agent", "state", "partition", "utilization", "sram_used_bytes", "emulated")
    ID_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ILD_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    SRAM_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    EMULATED_FIELD_NUMBER: _ClassVar[int]
    id: int
    machine: int
    index: int
    ild: int
    agent: str
    state: str
    partition: str
    utilization: float
    sram_used_bytes: int
    emulated: bool
    def __init__(self, id: _Optional[int] = ..., machine: _Optional[int] = ..., index: _Optional[int] = ..., ild: _Optional[int] = ..., agent: _Optional[str] = ..., state: _Optional[str] = ..., partition: _Optional[str] = ..., utilization: _Optional[float] = ..., sram_used_bytes: _Optional[int] = ..., emulated: _Optional[bool] = ...) -> None: ...

class ListIpusRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class Machine(_message.Message):
    __slots__ = ("machine", "ild", "agent", "name", "ipus", "idle", "allocated", "draining", "drained", "failed", "utilization", "partitions", "state", "reason", "completing")
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    ILD_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    COMPLETING_FIELD_NUMBER: _ClassVar[int]
    machine: int
    ild: int
    agent: str
    name: str
    ipus: int
    idle: int
    allocated: int
    draining: int
    drained: int
    failed: int
    utilization: float
    partitions: _containers.RepeatedScalarFieldContainer[str]
    state: str
    reason: Reason
    completing: int
    def __init__(self, machine: _Optional[int] = ..., ild: _Optional[int] = ..., agent: _Optional[str] = ..., name: _Optional[str] = ..., ipus: _Optional[int] = ..., idle: _Optional[int] = ..., allocated: _Optional[int] = ..., draining: _Optional[int] = ..., drained: _Optional[int] = ..., failed: _Optional[int] = ..., utilization: _Optional[float] = ..., partitions: _Optional[_Iterable[str]] = ..., state: _Optional[str] = ..., reason: _Optional[_Union[Reason, _Mapping]] = ..., completing: _Optional[int] = ...) -> None: ...

class Reason(_message.Message):
    __slots__ = ("text", "user", "time")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    text: str
    user: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, text: _Optional[str] = ..., user: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class IpuBlock(_message.Message):
    __slots__ = ("first_ipu", "ipus")
    FIRST_IPU_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    first_ipu: int
    ipus: int
    def __init__(self, first_ipu: _Optional[int] = ..., ipus: _Optional[int] = ...) -> None: ...

class ListMachinesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "blocks")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    blocks: _containers.RepeatedCompositeFieldContainer[IpuBlock]
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[IpuBlock, _Mapping]]] = ...) -> None: ...

class ListMachinesResponse(_message.Message):
    __slots__ = ("machines", "next_page_token", "total_size", "ipus_per_machine")
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    IPUS_PER_MACHINE_FIELD_NUMBER: _ClassVar[int]
    machines: _containers.RepeatedCompositeFieldContainer[Machine]
    next_page_token: str
    total_size: int
    ipus_per_machine: int
    def __init__(self, machines: _Optional[_Iterable[_Union[Machine, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ..., ipus_per_machine: _Optional[int] = ...) -> None: ...

class ListIpusResponse(_message.Message):
    __slots__ = ("ipus", "next_page_token", "total_size")
    IPUS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    ipus: _containers.RepeatedCompositeFieldContainer[Ipu]
    next_page_token: str
    total_size: int
    def __init__(self, ipus: _Optional[_Iterable[_Union[Ipu, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...
