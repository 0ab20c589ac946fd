import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from vipu.v1 import partition_pb2 as _partition_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NameRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class Agent(_message.Message):
    __slots__ = ("name", "host", "port", "machine", "state", "ipus", "created_at", "create_time", "reason", "partitions", "jobs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    IPUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    port: int
    machine: int
    state: str
    ipus: _containers.RepeatedScalarFieldContainer[int]
    created_at: float
    create_time: _timestamp_pb2.Timestamp
    reason: _partition_pb2.Reason
    partitions: _containers.RepeatedScalarFieldContainer[str]
    jobs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., machine: _Optional[int] = ..., state: _Optional[str] = ..., ipus: _Optional[_Iterable[int]] = ..., created_at: _Optional[float] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[_Union[_partition_pb2.Reason, _Mapping]] = ..., partitions: _Optional[_Iterable[str]] = ..., jobs: _Optional[_Iterable[int]] = ...) -> None: ...

class DrainAgentRequest(_message.Message):
    __slots__ = ("name", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DrainAgentsRequest(_message.Message):
    __slots__ = ("names", "reason")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    names: str
    reason: str
    def __init__(self, names: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AgentsRequest(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: str
    def __init__(self, names: _Optional[str] = ...) -> None: ...

class CreateAgentRequest(_message.Message):
    __slots__ = ("name", "host", "port", "machine", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    port: int
    machine: int
    request_id: str
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., machine: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents", "next_page_token", "total_size")
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    next_page_token: str
    total_size: int
    def __init__(self, agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class Cluster(_message.Message):
    __slots__ = ("name", "agents", "num_ilds", "topology", "cluster_topology", "created_at", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    NUM_ILDS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    agents: _containers.RepeatedScalarFieldContainer[str]
    num_ilds: int
    topology: str
    cluster_topology: str
    created_at: float
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., agents: _Optional[_Iterable[str]] = ..., num_ilds: _Optional[int] = ..., topology: _Optional[str] = ..., cluster_topology: _Optional[str] = ..., created_at: _Optional[float] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateClusterRequest(_message.Message):
    __slots__ = ("name", "agents", "num_ilds", "topology", "cluster_topology", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    NUM_ILDS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    agents: _containers.RepeatedScalarFieldContainer[str]
    num_ilds: int
    topology: str
    cluster_topology: str
    request_id: str
    def __init__(self, name: _Optional[str] = ..., agents: _Optional[_Iterable[str]] = ..., num_ilds: _Optional[int] = ..., topology: _Optional[str] = ..., cluster_topology: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ListClustersResponse(_message.Message):
    __slots__ = ("clusters", "next_page_token", "total_size")
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    clusters: _containers.RepeatedCompositeFieldContainer[Cluster]
    next_page_token: str
    total_size: int
    def __init__(self, clusters: _Optional[_Iterable[_Union[Cluster, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class CreateAllocationRequest(_message.Message):
    __slots__ = ("name", "agents", "users", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    agents: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    request_id: str
    def __init__(self, name: _Optional[str] = ..., agents: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., request_id: _Optional[str] = ...) -> None: ...

class User(_message.Message):
    __slots__ = ("name", "admin", "created_at", "unix_user", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UNIX_USER_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    created_at: float
    unix_user: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ..., created_at: _Optional[float] = ..., unix_user: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UpdateUserRequest(_message.Message):
    __slots__ = ("name", "unix_user")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UNIX_USER_FIELD_NUMBER: _ClassVar[int]
    name: str
    unix_user: str
    def __init__(self, name: _Optional[str] = ..., unix_user: _Optional[str] = ...) -> None: ...

class CreateUserRequest(_message.Message):
    __slots__ = ("name", "admin", "unix_user", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    UNIX_USER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    unix_user: str
    request_id: str
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ..., unix_user: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreatedUser(_message.Message):
    __slots__ = ("user", "access_key")
    USER_FIELD_NUMBER: _ClassVar[int]
    ACCESS_KEY_FIELD_NUMBER: _ClassVar[int]
    user: User
    access_key: str
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., access_key: _Optional[str] = ...) -> None: ...

class ListUsersResponse(_message.Message):
    __slots__ = ("users", "next_page_token", "total_size")
    USERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[User]
    next_page_token: str
    total_size: int
    def __init__(self, users: _Optional[_Iterable[_Union[User, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class FailIpusRequest(_message.Message):
    __slots__ = ("ipus", "reason")
    IPUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ipus: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, ipus: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ...) -> None: ...

class MachineRequest(_message.Message):
    __slots__ = ("machine",)
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    machine: int
    def __init__(self, machine: _Optional[int] = ...) -> None: ...

class IpuList(_message.Message):
    __slots__ = ("ipus",)
    IPUS_FIELD_NUMBER: _ClassVar[int]
    ipus: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ipus: _Optional[_Iterable[int]] = ...) -> None: ...

class FailLinkRequest(_message.Message):
    __slots__ = ("ipu_a", "ipu_b")
    IPU_A_FIELD_NUMBER: _ClassVar[int]
    IPU_B_FIELD_NUMBER: _ClassVar[int]
    ipu_a: int
    ipu_b: int
    def __init__(self, ipu_a: _Optional[int] = ..., ipu_b: _Optional[int] = ...) -> None: ...
