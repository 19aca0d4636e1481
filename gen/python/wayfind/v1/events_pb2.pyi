import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from wayfind.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_TYPE_UNSPECIFIED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_SEARCH_QUERY: _ClassVar[EventType]
    EVENT_TYPE_TOOL_GET: _ClassVar[EventType]
    EVENT_TYPE_TOOL_ACTIVATED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_ACTIVATION_DENIED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_SEARCH_CACHE_READY: _ClassVar[EventType]
    EVENT_TYPE_TOOL_POLICY_FILTERED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_DIRECTORY_RENDERED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_HINTS_GENERATED: _ClassVar[EventType]
    EVENT_TYPE_SKILL_PACK_LOADED: _ClassVar[EventType]
    EVENT_TYPE_SKILL_DIRECTORY_RENDERED: _ClassVar[EventType]
    EVENT_TYPE_SKILLS_RETRIEVED: _ClassVar[EventType]
    EVENT_TYPE_SKILL_SEARCH_QUERY: _ClassVar[EventType]
    EVENT_TYPE_SKILL_GET: _ClassVar[EventType]
    EVENT_TYPE_SKILL_LIST: _ClassVar[EventType]
    EVENT_TYPE_USAGE_RECORDED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_OUTCOME_REPORTED: _ClassVar[EventType]
    EVENT_TYPE_SKILL_OUTCOME_REPORTED: _ClassVar[EventType]
    EVENT_TYPE_TOOL_CALLED: _ClassVar[EventType]
EVENT_TYPE_UNSPECIFIED: EventType
EVENT_TYPE_TOOL_SEARCH_QUERY: EventType
EVENT_TYPE_TOOL_GET: EventType
EVENT_TYPE_TOOL_ACTIVATED: EventType
EVENT_TYPE_TOOL_ACTIVATION_DENIED: EventType
EVENT_TYPE_TOOL_SEARCH_CACHE_READY: EventType
EVENT_TYPE_TOOL_POLICY_FILTERED: EventType
EVENT_TYPE_TOOL_DIRECTORY_RENDERED: EventType
EVENT_TYPE_TOOL_HINTS_GENERATED: EventType
EVENT_TYPE_SKILL_PACK_LOADED: EventType
EVENT_TYPE_SKILL_DIRECTORY_RENDERED: EventType
EVENT_TYPE_SKILLS_RETRIEVED: EventType
EVENT_TYPE_SKILL_SEARCH_QUERY: EventType
EVENT_TYPE_SKILL_GET: EventType
EVENT_TYPE_SKILL_LIST: EventType
EVENT_TYPE_USAGE_RECORDED: EventType
EVENT_TYPE_TOOL_OUTCOME_REPORTED: EventType
EVENT_TYPE_SKILL_OUTCOME_REPORTED: EventType
EVENT_TYPE_TOOL_CALLED: EventType

class Event(_message.Message):
    __slots__ = ("id", "time", "type", "tenant_id", "session_id", "run_id", "attributes", "event_type", "tool_search_query", "tool_get", "tool_activated", "tool_activation_denied", "tool_search_cache_ready", "tool_policy_filtered", "tool_directory_rendered", "tool_hints_generated", "skill_pack_loaded", "skill_directory_rendered", "skills_retrieved", "skill_search_query", "skill_get", "skill_list", "usage_recorded", "tool_outcome_reported", "skill_outcome_reported", "tool_called")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    TOOL_SEARCH_QUERY_FIELD_NUMBER: _ClassVar[int]
    TOOL_GET_FIELD_NUMBER: _ClassVar[int]
    TOOL_ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    TOOL_ACTIVATION_DENIED_FIELD_NUMBER: _ClassVar[int]
    TOOL_SEARCH_CACHE_READY_FIELD_NUMBER: _ClassVar[int]
    TOOL_POLICY_FILTERED_FIELD_NUMBER: _ClassVar[int]
    TOOL_DIRECTORY_RENDERED_FIELD_NUMBER: _ClassVar[int]
    TOOL_HINTS_GENERATED_FIELD_NUMBER: _ClassVar[int]
    SKILL_PACK_LOADED_FIELD_NUMBER: _ClassVar[int]
    SKILL_DIRECTORY_RENDERED_FIELD_NUMBER: _ClassVar[int]
    SKILLS_RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    SKILL_SEARCH_QUERY_FIELD_NUMBER: _ClassVar[int]
    SKILL_GET_FIELD_NUMBER: _ClassVar[int]
    SKILL_LIST_FIELD_NUMBER: _ClassVar[int]
    USAGE_RECORDED_FIELD_NUMBER: _ClassVar[int]
    TOOL_OUTCOME_REPORTED_FIELD_NUMBER: _ClassVar[int]
    SKILL_OUTCOME_REPORTED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLED_FIELD_NUMBER: _ClassVar[int]
    id: int
    time: _timestamp_pb2.Timestamp
    type: str
    tenant_id: str
    session_id: str
    run_id: str
    attributes: _struct_pb2.Struct
    event_type: EventType
    tool_search_query: ToolSearchQuery
    tool_get: ToolGet
    tool_activated: ToolActivated
    tool_activation_denied: ToolActivationDenied
    tool_search_cache_ready: ToolSearchCacheReady
    tool_policy_filtered: ToolPolicyFiltered
    tool_directory_rendered: ToolDirectoryRendered
    tool_hints_generated: ToolHintsGenerated
    skill_pack_loaded: SkillPackLoaded
    skill_directory_rendered: SkillDirectoryRendered
    skills_retrieved: SkillsRetrieved
    skill_search_query: SkillSearchQuery
    skill_get: SkillGet
    skill_list: SkillList
    usage_recorded: UsageRecorded
    tool_outcome_reported: ToolOutcomeReported
    skill_outcome_reported: SkillOutcomeReported
    tool_called: ToolCalled
    def __init__(self, id: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., type: _Optional[str] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ..., run_id: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., event_type: _Optional[_Union[EventType, str]] = ..., tool_search_query: _Optional[_Union[ToolSearchQuery, _Mapping]] = ..., tool_get: _Optional[_Union[ToolGet, _Mapping]] = ..., tool_activated: _Optional[_Union[ToolActivated, _Mapping]] = ..., tool_activation_denied: _Optional[_Union[ToolActivationDenied, _Mapping]] = ..., tool_search_cache_ready: _Optional[_Union[ToolSearchCacheReady, _Mapping]] = ..., tool_policy_filtered: _Optional[_Union[ToolPolicyFiltered, _Mapping]] = ..., tool_directory_rendered: _Optional[_Union[ToolDirectoryRendered, _Mapping]] = ..., tool_hints_generated: _Optional[_Union[ToolHintsGenerated, _Mapping]] = ..., skill_pack_loaded: _Optional[_Union[SkillPackLoaded, _Mapping]] = ..., skill_directory_rendered: _Optional[_Union[SkillDirectoryRendered, _Mapping]] = ..., skills_retrieved: _Optional[_Union[SkillsRetrieved, _Mapping]] = ..., skill_search_query: _Optional[_Union[SkillSearchQuery, _Mapping]] = ..., skill_get: _Optional[_Union[SkillGet, _Mapping]] = ..., skill_list: _Optional[_Union[SkillList, _Mapping]] = ..., usage_recorded: _Optional[_Union[UsageRecorded, _Mapping]] = ..., tool_outcome_reported: _Optional[_Union[ToolOutcomeReported, _Mapping]] = ..., skill_outcome_reported: _Optional[_Union[SkillOutcomeReported, _Mapping]] = ..., tool_called: _Optional[_Union[ToolCalled, _Mapping]] = ...) -> None: ...

class ToolSearchQuery(_message.Message):
    __slots__ = ("query", "requested_type", "strategy", "result_count", "semantic_status", "semantic_texts_pending", "semantic_tier")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_TYPE_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    RESULT_COUNT_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_STATUS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TEXTS_PENDING_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TIER_FIELD_NUMBER: _ClassVar[int]
    query: str
    requested_type: _common_pb2.SearchType
    strategy: str
    result_count: int
    semantic_status: _common_pb2.SemanticStatus
    semantic_texts_pending: int
    semantic_tier: _common_pb2.SemanticTier
    def __init__(self, query: _Optional[str] = ..., requested_type: _Optional[_Union[_common_pb2.SearchType, str]] = ..., strategy: _Optional[str] = ..., result_count: _Optional[int] = ..., semantic_status: _Optional[_Union[_common_pb2.SemanticStatus, str]] = ..., semantic_texts_pending: _Optional[int] = ..., semantic_tier: _Optional[_Union[_common_pb2.SemanticTier, str]] = ...) -> None: ...

class ToolGet(_message.Message):
    __slots__ = ("requested_count", "returned_count")
    REQUESTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    RETURNED_COUNT_FIELD_NUMBER: _ClassVar[int]
    requested_count: int
    returned_count: int
    def __init__(self, requested_count: _Optional[int] = ..., returned_count: _Optional[int] = ...) -> None: ...

class ToolActivated(_message.Message):
    __slots__ = ("tool", "scope", "source", "reason")
    class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SCOPE_UNSPECIFIED: _ClassVar[ToolActivated.Scope]
        SCOPE_RUN: _ClassVar[ToolActivated.Scope]
        SCOPE_SESSION: _ClassVar[ToolActivated.Scope]
    SCOPE_UNSPECIFIED: ToolActivated.Scope
    SCOPE_RUN: ToolActivated.Scope
    SCOPE_SESSION: ToolActivated.Scope
    class Source(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SOURCE_UNSPECIFIED: _ClassVar[ToolActivated.Source]
        SOURCE_EXPLICIT: _ClassVar[ToolActivated.Source]
        SOURCE_RESOLVE: _ClassVar[ToolActivated.Source]
        SOURCE_LAZY_GROUP: _ClassVar[ToolActivated.Source]
    SOURCE_UNSPECIFIED: ToolActivated.Source
    SOURCE_EXPLICIT: ToolActivated.Source
    SOURCE_RESOLVE: ToolActivated.Source
    SOURCE_LAZY_GROUP: ToolActivated.Source
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    tool: str
    scope: ToolActivated.Scope
    source: ToolActivated.Source
    reason: str
    def __init__(self, tool: _Optional[str] = ..., scope: _Optional[_Union[ToolActivated.Scope, str]] = ..., source: _Optional[_Union[ToolActivated.Source, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ToolActivationDenied(_message.Message):
    __slots__ = ("reason", "count")
    REASON_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    reason: str
    count: int
    def __init__(self, reason: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ToolSearchCacheReady(_message.Message):
    __slots__ = ("tool_count",)
    TOOL_COUNT_FIELD_NUMBER: _ClassVar[int]
    tool_count: int
    def __init__(self, tool_count: _Optional[int] = ...) -> None: ...

class ToolPolicyFiltered(_message.Message):
    __slots__ = ("removed_count", "registry_count")
    REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REGISTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    removed_count: int
    registry_count: int
    def __init__(self, removed_count: _Optional[int] = ..., registry_count: _Optional[int] = ...) -> None: ...

class ToolDirectoryRendered(_message.Message):
    __slots__ = ("entry_count", "deferred_count")
    ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_COUNT_FIELD_NUMBER: _ClassVar[int]
    entry_count: int
    deferred_count: int
    def __init__(self, entry_count: _Optional[int] = ..., deferred_count: _Optional[int] = ...) -> None: ...

class ToolHintsGenerated(_message.Message):
    __slots__ = ("hint_count",)
    HINT_COUNT_FIELD_NUMBER: _ClassVar[int]
    hint_count: int
    def __init__(self, hint_count: _Optional[int] = ...) -> None: ...

class SkillPackLoaded(_message.Message):
    __slots__ = ("pack", "skill_count", "loaded_count", "updated_count", "unchanged_count", "removed_count")
    PACK_FIELD_NUMBER: _ClassVar[int]
    SKILL_COUNT_FIELD_NUMBER: _ClassVar[int]
    LOADED_COUNT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    pack: str
    skill_count: int
    loaded_count: int
    updated_count: int
    unchanged_count: int
    removed_count: int
    def __init__(self, pack: _Optional[str] = ..., skill_count: _Optional[int] = ..., loaded_count: _Optional[int] = ..., updated_count: _Optional[int] = ..., unchanged_count: _Optional[int] = ..., removed_count: _Optional[int] = ...) -> None: ...

class SkillDirectoryRendered(_message.Message):
    __slots__ = ("entry_count", "total_visible", "token_estimate")
    ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VISIBLE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    entry_count: int
    total_visible: int
    token_estimate: int
    def __init__(self, entry_count: _Optional[int] = ..., total_visible: _Optional[int] = ..., token_estimate: _Optional[int] = ...) -> None: ...

class SkillsRetrieved(_message.Message):
    __slots__ = ("skill_count", "top_k", "raw_token_estimate", "final_token_estimate", "was_compressed", "task_types")
    SKILL_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    RAW_TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    FINAL_TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    WAS_COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPES_FIELD_NUMBER: _ClassVar[int]
    skill_count: int
    top_k: int
    raw_token_estimate: int
    final_token_estimate: int
    was_compressed: bool
    task_types: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, skill_count: _Optional[int] = ..., top_k: _Optional[int] = ..., raw_token_estimate: _Optional[int] = ..., final_token_estimate: _Optional[int] = ..., was_compressed: _Optional[bool] = ..., task_types: _Optional[_Iterable[str]] = ...) -> None: ...

class SkillSearchQuery(_message.Message):
    __slots__ = ("query", "search_type", "result_count", "semantic_status", "semantic_texts_pending", "semantic_tier")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SEARCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESULT_COUNT_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_STATUS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TEXTS_PENDING_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TIER_FIELD_NUMBER: _ClassVar[int]
    query: str
    search_type: _common_pb2.SearchType
    result_count: int
    semantic_status: _common_pb2.SemanticStatus
    semantic_texts_pending: int
    semantic_tier: _common_pb2.SemanticTier
    def __init__(self, query: _Optional[str] = ..., search_type: _Optional[_Union[_common_pb2.SearchType, str]] = ..., result_count: _Optional[int] = ..., semantic_status: _Optional[_Union[_common_pb2.SemanticStatus, str]] = ..., semantic_texts_pending: _Optional[int] = ..., semantic_tier: _Optional[_Union[_common_pb2.SemanticTier, str]] = ...) -> None: ...

class SkillGet(_message.Message):
    __slots__ = ("requested_count", "found_count", "format", "raw_token_estimate", "final_token_estimate", "was_compressed")
    REQUESTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    FOUND_COUNT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    RAW_TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    FINAL_TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    WAS_COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    requested_count: int
    found_count: int
    format: str
    raw_token_estimate: int
    final_token_estimate: int
    was_compressed: bool
    def __init__(self, requested_count: _Optional[int] = ..., found_count: _Optional[int] = ..., format: _Optional[str] = ..., raw_token_estimate: _Optional[int] = ..., final_token_estimate: _Optional[int] = ..., was_compressed: _Optional[bool] = ...) -> None: ...

class SkillList(_message.Message):
    __slots__ = ("result_count", "total_count", "page_size")
    RESULT_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    result_count: int
    total_count: int
    page_size: int
    def __init__(self, result_count: _Optional[int] = ..., total_count: _Optional[int] = ..., page_size: _Optional[int] = ...) -> None: ...

class UsageRecorded(_message.Message):
    __slots__ = ("record_id", "provider", "model", "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd")
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_CREATION_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    record_id: int
    provider: _common_pb2.Provider
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cost_usd: float
    def __init__(self, record_id: _Optional[int] = ..., provider: _Optional[_Union[_common_pb2.Provider, str]] = ..., model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_input_tokens: _Optional[int] = ..., cache_creation_input_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class ToolOutcomeReported(_message.Message):
    __slots__ = ("tool", "outcome", "search_id", "learned", "note")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    LEARNED_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    outcome: _common_pb2.Outcome
    search_id: str
    learned: bool
    note: str
    def __init__(self, tool: _Optional[str] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., search_id: _Optional[str] = ..., learned: _Optional[bool] = ..., note: _Optional[str] = ...) -> None: ...

class SkillOutcomeReported(_message.Message):
    __slots__ = ("skill", "outcome", "search_id", "note", "learned")
    SKILL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    LEARNED_FIELD_NUMBER: _ClassVar[int]
    skill: str
    outcome: _common_pb2.Outcome
    search_id: str
    note: str
    learned: bool
    def __init__(self, skill: _Optional[str] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., search_id: _Optional[str] = ..., note: _Optional[str] = ..., learned: _Optional[bool] = ...) -> None: ...

class ToolCalled(_message.Message):
    __slots__ = ("tool", "source", "duration_ms", "outcome", "result_bytes")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    tool: str
    source: str
    duration_ms: int
    outcome: str
    result_bytes: int
    def __init__(self, tool: _Optional[str] = ..., source: _Optional[str] = ..., duration_ms: _Optional[int] = ..., outcome: _Optional[str] = ..., result_bytes: _Optional[int] = ...) -> None: ...

class EventFilter(_message.Message):
    __slots__ = ("types", "tenant_id", "session_id", "after_id", "from_oldest", "event_types", "tool", "since")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_OLDEST_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedScalarFieldContainer[str]
    tenant_id: str
    session_id: str
    after_id: int
    from_oldest: bool
    event_types: _containers.RepeatedScalarFieldContainer[EventType]
    tool: str
    since: _timestamp_pb2.Timestamp
    def __init__(self, types: _Optional[_Iterable[str]] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ..., after_id: _Optional[int] = ..., from_oldest: _Optional[bool] = ..., event_types: _Optional[_Iterable[_Union[EventType, str]]] = ..., tool: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WatchStatus(_message.Message):
    __slots__ = ("oldest_retained_id", "events_lost")
    OLDEST_RETAINED_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_LOST_FIELD_NUMBER: _ClassVar[int]
    oldest_retained_id: int
    events_lost: bool
    def __init__(self, oldest_retained_id: _Optional[int] = ..., events_lost: _Optional[bool] = ...) -> None: ...
