import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Event(_message.Message):
    __slots__ = ("id", "time", "type", "tenant_id", "session_id", "run_id", "attributes")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    id: int
    time: _timestamp_pb2.Timestamp
    type: str
    tenant_id: str
    session_id: str
    run_id: str
    attributes: _struct_pb2.Struct
    def __init__(self, id: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., type: _Optional[str] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ..., run_id: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class EventFilter(_message.Message):
    __slots__ = ("types", "tenant_id", "session_id", "after_id", "from_oldest")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_OLDEST_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedScalarFieldContainer[str]
    tenant_id: str
    session_id: str
    after_id: int
    from_oldest: bool
    def __init__(self, types: _Optional[_Iterable[str]] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ..., after_id: _Optional[int] = ..., from_oldest: _Optional[bool] = ...) -> None: ...

class WatchStatus(_message.Message):
    __slots__ = ("oldest_retained_id", "events_lost")
    OLDEST_RETAINED_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_LOST_FIELD_NUMBER: _ClassVar[int]
    oldest_retained_id: int
    events_lost: bool
    def __init__(self, oldest_retained_id: _Optional[int] = ..., events_lost: _Optional[bool] = ...) -> None: ...
