import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from wayfind.v1 import common_pb2 as _common_pb2
from wayfind.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UsageGroupBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    USAGE_GROUP_BY_UNSPECIFIED: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_SESSION: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_RUN: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_PROVIDER: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_MODEL: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_DAY: _ClassVar[UsageGroupBy]
USAGE_GROUP_BY_UNSPECIFIED: UsageGroupBy
USAGE_GROUP_BY_SESSION: UsageGroupBy
USAGE_GROUP_BY_RUN: UsageGroupBy
USAGE_GROUP_BY_PROVIDER: UsageGroupBy
USAGE_GROUP_BY_MODEL: UsageGroupBy
USAGE_GROUP_BY_DAY: UsageGroupBy

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation_1h_input_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_1H_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cache_creation_1h_input_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_input_tokens: _Optional[int] = ..., cache_creation_input_tokens: _Optional[int] = ..., cache_creation_1h_input_tokens: _Optional[int] = ...) -> None: ...

class RecordUsageRequest(_message.Message):
    __slots__ = ("caller", "provider", "model", "usage", "idempotency_key", "occurred_at")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    provider: _common_pb2.Provider
    model: str
    usage: Usage
    idempotency_key: str
    occurred_at: _timestamp_pb2.Timestamp
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., provider: _Optional[_Union[_common_pb2.Provider, str]] = ..., model: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RecordUsageResponse(_message.Message):
    __slots__ = ("cost_usd", "duplicate", "unknown_cost_reason")
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_COST_REASON_FIELD_NUMBER: _ClassVar[int]
    cost_usd: float
    duplicate: bool
    unknown_cost_reason: str
    def __init__(self, cost_usd: _Optional[float] = ..., duplicate: _Optional[bool] = ..., unknown_cost_reason: _Optional[str] = ...) -> None: ...

class GetUsageSummaryRequest(_message.Message):
    __slots__ = ("caller", "tenant_id", "session_id", "model", "start_time", "end_time", "group_by", "run_id", "provider")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    tenant_id: str
    session_id: str
    model: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    group_by: UsageGroupBy
    run_id: str
    provider: _common_pb2.Provider
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ..., model: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., group_by: _Optional[_Union[UsageGroupBy, str]] = ..., run_id: _Optional[str] = ..., provider: _Optional[_Union[_common_pb2.Provider, str]] = ...) -> None: ...

class UsageTotals(_message.Message):
    __slots__ = ("calls", "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "total_cost_usd", "calls_with_unknown_cost", "cache_hit_rate", "rate_limited_input_tokens", "savings_usd", "cache_creation_1h_input_tokens", "uncached_cost_usd")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COST_USD_FIELD_NUMBER: _ClassVar[int]
    CALLS_WITH_UNKNOWN_COST_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_RATE_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMITED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SAVINGS_USD_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_1H_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    UNCACHED_COST_USD_FIELD_NUMBER: _ClassVar[int]
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    total_cost_usd: float
    calls_with_unknown_cost: int
    cache_hit_rate: float
    rate_limited_input_tokens: int
    savings_usd: float
    cache_creation_1h_input_tokens: int
    uncached_cost_usd: float
    def __init__(self, calls: _Optional[int] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_input_tokens: _Optional[int] = ..., cache_creation_input_tokens: _Optional[int] = ..., total_cost_usd: _Optional[float] = ..., calls_with_unknown_cost: _Optional[int] = ..., cache_hit_rate: _Optional[float] = ..., rate_limited_input_tokens: _Optional[int] = ..., savings_usd: _Optional[float] = ..., cache_creation_1h_input_tokens: _Optional[int] = ..., uncached_cost_usd: _Optional[float] = ...) -> None: ...

class UsageGroup(_message.Message):
    __slots__ = ("key", "totals")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    key: str
    totals: UsageTotals
    def __init__(self, key: _Optional[str] = ..., totals: _Optional[_Union[UsageTotals, _Mapping]] = ...) -> None: ...

class GetUsageSummaryResponse(_message.Message):
    __slots__ = ("totals", "groups")
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    totals: UsageTotals
    groups: _containers.RepeatedCompositeFieldContainer[UsageGroup]
    def __init__(self, totals: _Optional[_Union[UsageTotals, _Mapping]] = ..., groups: _Optional[_Iterable[_Union[UsageGroup, _Mapping]]] = ...) -> None: ...

class WatchUsageEventsRequest(_message.Message):
    __slots__ = ("caller", "filter")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    filter: _events_pb2.EventFilter
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., filter: _Optional[_Union[_events_pb2.EventFilter, _Mapping]] = ...) -> None: ...

class WatchUsageEventsResponse(_message.Message):
    __slots__ = ("status", "event", "sent_at")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    status: _events_pb2.WatchStatus
    event: _events_pb2.Event
    sent_at: _timestamp_pb2.Timestamp
    def __init__(self, status: _Optional[_Union[_events_pb2.WatchStatus, _Mapping]] = ..., event: _Optional[_Union[_events_pb2.Event, _Mapping]] = ..., sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
