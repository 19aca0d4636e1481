import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from wayfind.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class KeyOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    KEY_ORIGIN_UNSPECIFIED: _ClassVar[KeyOrigin]
    KEY_ORIGIN_CONFIG: _ClassVar[KeyOrigin]
    KEY_ORIGIN_CREATED: _ClassVar[KeyOrigin]
KEY_ORIGIN_UNSPECIFIED: KeyOrigin
KEY_ORIGIN_CONFIG: KeyOrigin
KEY_ORIGIN_CREATED: KeyOrigin

class ApiKeyInfo(_message.Message):
    __slots__ = ("id", "tenant_id", "roles", "projects", "entitlements", "origin", "created_at", "expires_at", "revoked_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    PROJECTS_FIELD_NUMBER: _ClassVar[int]
    ENTITLEMENTS_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    projects: _containers.RepeatedScalarFieldContainer[str]
    entitlements: _containers.RepeatedScalarFieldContainer[str]
    origin: KeyOrigin
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    revoked_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., projects: _Optional[_Iterable[str]] = ..., entitlements: _Optional[_Iterable[str]] = ..., origin: _Optional[_Union[KeyOrigin, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ("caller",)
    CALLER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ...) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[ApiKeyInfo]
    def __init__(self, keys: _Optional[_Iterable[_Union[ApiKeyInfo, _Mapping]]] = ...) -> None: ...

class CreateApiKeyRequest(_message.Message):
    __slots__ = ("caller", "id", "tenant_id", "roles", "projects", "entitlements", "expires_in_seconds", "expires_at")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    PROJECTS_FIELD_NUMBER: _ClassVar[int]
    ENTITLEMENTS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    id: str
    tenant_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    projects: _containers.RepeatedScalarFieldContainer[str]
    entitlements: _containers.RepeatedScalarFieldContainer[str]
    expires_in_seconds: int
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., projects: _Optional[_Iterable[str]] = ..., entitlements: _Optional[_Iterable[str]] = ..., expires_in_seconds: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ("key", "secret")
    KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    key: ApiKeyInfo
    secret: str
    def __init__(self, key: _Optional[_Union[ApiKeyInfo, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ("caller", "id", "tenant_id")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    id: str
    tenant_id: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ("revoked",)
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    revoked: bool
    def __init__(self, revoked: _Optional[bool] = ...) -> None: ...
