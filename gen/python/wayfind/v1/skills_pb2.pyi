import datetime

from google.protobuf import struct_pb2 as _struct_pb2
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

class TaskType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_TYPE_UNSPECIFIED: _ClassVar[TaskType]
    TASK_TYPE_BROWSER: _ClassVar[TaskType]
    TASK_TYPE_API: _ClassVar[TaskType]
    TASK_TYPE_CODE: _ClassVar[TaskType]
    TASK_TYPE_DOMAIN: _ClassVar[TaskType]
    TASK_TYPE_UNKNOWN: _ClassVar[TaskType]

class SkillOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SKILL_ORIGIN_UNSPECIFIED: _ClassVar[SkillOrigin]
    SKILL_ORIGIN_PACK: _ClassVar[SkillOrigin]
    SKILL_ORIGIN_LEARNED: _ClassVar[SkillOrigin]

class SkillScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SKILL_SCOPE_UNSPECIFIED: _ClassVar[SkillScope]
    SKILL_SCOPE_PROJECT: _ClassVar[SkillScope]
    SKILL_SCOPE_TENANT: _ClassVar[SkillScope]
    SKILL_SCOPE_GLOBAL: _ClassVar[SkillScope]

class SkillFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SKILL_FORMAT_UNSPECIFIED: _ClassVar[SkillFormat]
    SKILL_FORMAT_RAW: _ClassVar[SkillFormat]
    SKILL_FORMAT_INJECTION: _ClassVar[SkillFormat]
TASK_TYPE_UNSPECIFIED: TaskType
TASK_TYPE_BROWSER: TaskType
TASK_TYPE_API: TaskType
TASK_TYPE_CODE: TaskType
TASK_TYPE_DOMAIN: TaskType
TASK_TYPE_UNKNOWN: TaskType
SKILL_ORIGIN_UNSPECIFIED: SkillOrigin
SKILL_ORIGIN_PACK: SkillOrigin
SKILL_ORIGIN_LEARNED: SkillOrigin
SKILL_SCOPE_UNSPECIFIED: SkillScope
SKILL_SCOPE_PROJECT: SkillScope
SKILL_SCOPE_TENANT: SkillScope
SKILL_SCOPE_GLOBAL: SkillScope
SKILL_FORMAT_UNSPECIFIED: SkillFormat
SKILL_FORMAT_RAW: SkillFormat
SKILL_FORMAT_INJECTION: SkillFormat

class Skill(_message.Message):
    __slots__ = ("id", "name", "title", "description", "trigger", "task_type", "tags", "steps", "preconditions", "failure_modes", "origin", "origin_ref", "content_hash", "scope", "tenant_id", "project_id", "created_at", "updated_at", "last_used_at", "use_count", "extra")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    PRECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_MODES_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_REF_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    USE_COUNT_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    title: str
    description: str
    trigger: str
    task_type: TaskType
    tags: _containers.RepeatedScalarFieldContainer[str]
    steps: _containers.RepeatedScalarFieldContainer[str]
    preconditions: _containers.RepeatedScalarFieldContainer[str]
    failure_modes: _containers.RepeatedScalarFieldContainer[str]
    origin: SkillOrigin
    origin_ref: str
    content_hash: str
    scope: SkillScope
    tenant_id: str
    project_id: str
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    last_used_at: _timestamp_pb2.Timestamp
    use_count: int
    extra: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., trigger: _Optional[str] = ..., task_type: _Optional[_Union[TaskType, str]] = ..., tags: _Optional[_Iterable[str]] = ..., steps: _Optional[_Iterable[str]] = ..., preconditions: _Optional[_Iterable[str]] = ..., failure_modes: _Optional[_Iterable[str]] = ..., origin: _Optional[_Union[SkillOrigin, str]] = ..., origin_ref: _Optional[str] = ..., content_hash: _Optional[str] = ..., scope: _Optional[_Union[SkillScope, str]] = ..., tenant_id: _Optional[str] = ..., project_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., use_count: _Optional[int] = ..., extra: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class SkillFile(_message.Message):
    __slots__ = ("path", "content")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    path: str
    content: str
    def __init__(self, path: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class LoadSkillPackRequest(_message.Message):
    __slots__ = ("caller", "pack_name", "path", "files", "scope", "version", "update_existing_pack_skills")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PACK_NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_EXISTING_PACK_SKILLS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    pack_name: str
    path: str
    files: SkillFilesList
    scope: SkillScope
    version: str
    update_existing_pack_skills: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., pack_name: _Optional[str] = ..., path: _Optional[str] = ..., files: _Optional[_Union[SkillFilesList, _Mapping]] = ..., scope: _Optional[_Union[SkillScope, str]] = ..., version: _Optional[str] = ..., update_existing_pack_skills: _Optional[bool] = ...) -> None: ...

class SkillFilesList(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[SkillFile]
    def __init__(self, files: _Optional[_Iterable[_Union[SkillFile, _Mapping]]] = ...) -> None: ...

class LoadSkillPackResponse(_message.Message):
    __slots__ = ("loaded", "updated", "unchanged", "skill_count")
    LOADED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    SKILL_COUNT_FIELD_NUMBER: _ClassVar[int]
    loaded: int
    updated: int
    unchanged: int
    skill_count: int
    def __init__(self, loaded: _Optional[int] = ..., updated: _Optional[int] = ..., unchanged: _Optional[int] = ..., skill_count: _Optional[int] = ...) -> None: ...

class SkillMatch(_message.Message):
    __slots__ = ("name", "title", "description", "task_type", "score", "match_type", "lexical_score", "semantic_score", "learned_score")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    MATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_SCORE_FIELD_NUMBER: _ClassVar[int]
    LEARNED_SCORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    description: str
    task_type: TaskType
    score: float
    match_type: _common_pb2.MatchType
    lexical_score: float
    semantic_score: float
    learned_score: float
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., task_type: _Optional[_Union[TaskType, str]] = ..., score: _Optional[float] = ..., match_type: _Optional[_Union[_common_pb2.MatchType, str]] = ..., lexical_score: _Optional[float] = ..., semantic_score: _Optional[float] = ..., learned_score: _Optional[float] = ...) -> None: ...

class SearchSkillsRequest(_message.Message):
    __slots__ = ("caller", "query", "search_type", "task_type", "limit", "min_score")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SEARCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    query: str
    search_type: _common_pb2.SearchType
    task_type: TaskType
    limit: int
    min_score: float
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., query: _Optional[str] = ..., search_type: _Optional[_Union[_common_pb2.SearchType, str]] = ..., task_type: _Optional[_Union[TaskType, str]] = ..., limit: _Optional[int] = ..., min_score: _Optional[float] = ...) -> None: ...

class SearchSkillsResponse(_message.Message):
    __slots__ = ("skills", "effective_search_type", "match_quality", "semantic_status", "semantic_pending", "query_rewrites", "search_id", "semantic_texts_pending", "semantic_tier")
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_SEARCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    MATCH_QUALITY_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_STATUS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_PENDING_FIELD_NUMBER: _ClassVar[int]
    QUERY_REWRITES_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TEXTS_PENDING_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TIER_FIELD_NUMBER: _ClassVar[int]
    skills: _containers.RepeatedCompositeFieldContainer[SkillMatch]
    effective_search_type: _common_pb2.SearchType
    match_quality: _common_pb2.MatchQuality
    semantic_status: _common_pb2.SemanticStatus
    semantic_pending: int
    query_rewrites: _containers.RepeatedCompositeFieldContainer[_common_pb2.QueryRewrite]
    search_id: str
    semantic_texts_pending: int
    semantic_tier: _common_pb2.SemanticTier
    def __init__(self, skills: _Optional[_Iterable[_Union[SkillMatch, _Mapping]]] = ..., effective_search_type: _Optional[_Union[_common_pb2.SearchType, str]] = ..., match_quality: _Optional[_Union[_common_pb2.MatchQuality, str]] = ..., semantic_status: _Optional[_Union[_common_pb2.SemanticStatus, str]] = ..., semantic_pending: _Optional[int] = ..., query_rewrites: _Optional[_Iterable[_Union[_common_pb2.QueryRewrite, _Mapping]]] = ..., search_id: _Optional[str] = ..., semantic_texts_pending: _Optional[int] = ..., semantic_tier: _Optional[_Union[_common_pb2.SemanticTier, str]] = ...) -> None: ...

class GetSkillsRequest(_message.Message):
    __slots__ = ("caller", "names", "format", "max_tokens")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    names: _containers.RepeatedScalarFieldContainer[str]
    format: SkillFormat
    max_tokens: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., names: _Optional[_Iterable[str]] = ..., format: _Optional[_Union[SkillFormat, str]] = ..., max_tokens: _Optional[int] = ...) -> None: ...

class GetSkillsResponse(_message.Message):
    __slots__ = ("skills", "formatted_context", "token_estimate", "not_found")
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    FORMATTED_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    skills: _containers.RepeatedCompositeFieldContainer[Skill]
    formatted_context: str
    token_estimate: int
    not_found: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, skills: _Optional[_Iterable[_Union[Skill, _Mapping]]] = ..., formatted_context: _Optional[str] = ..., token_estimate: _Optional[int] = ..., not_found: _Optional[_Iterable[str]] = ...) -> None: ...

class ListSkillsRequest(_message.Message):
    __slots__ = ("caller", "page_size", "page_token", "task_type", "origin", "scope")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    page_size: int
    page_token: str
    task_type: TaskType
    origin: SkillOrigin
    scope: SkillScope
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., task_type: _Optional[_Union[TaskType, str]] = ..., origin: _Optional[_Union[SkillOrigin, str]] = ..., scope: _Optional[_Union[SkillScope, str]] = ...) -> None: ...

class SkillSummary(_message.Message):
    __slots__ = ("name", "title", "description", "task_type", "origin", "scope")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    description: str
    task_type: TaskType
    origin: SkillOrigin
    scope: SkillScope
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., task_type: _Optional[_Union[TaskType, str]] = ..., origin: _Optional[_Union[SkillOrigin, str]] = ..., scope: _Optional[_Union[SkillScope, str]] = ...) -> None: ...

class ListSkillsResponse(_message.Message):
    __slots__ = ("skills", "next_page_token", "total_count")
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    skills: _containers.RepeatedCompositeFieldContainer[SkillSummary]
    next_page_token: str
    total_count: int
    def __init__(self, skills: _Optional[_Iterable[_Union[SkillSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_count: _Optional[int] = ...) -> None: ...

class GetRelevantSkillsRequest(_message.Message):
    __slots__ = ("caller", "task", "top_k", "max_tokens", "min_score")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    task: str
    top_k: int
    max_tokens: int
    min_score: float
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., task: _Optional[str] = ..., top_k: _Optional[int] = ..., max_tokens: _Optional[int] = ..., min_score: _Optional[float] = ...) -> None: ...

class GetRelevantSkillsResponse(_message.Message):
    __slots__ = ("formatted_context", "skill_names", "raw_token_estimate", "token_estimate", "was_compressed", "search_id")
    FORMATTED_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    SKILL_NAMES_FIELD_NUMBER: _ClassVar[int]
    RAW_TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    WAS_COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    formatted_context: str
    skill_names: _containers.RepeatedScalarFieldContainer[str]
    raw_token_estimate: int
    token_estimate: int
    was_compressed: bool
    search_id: str
    def __init__(self, formatted_context: _Optional[str] = ..., skill_names: _Optional[_Iterable[str]] = ..., raw_token_estimate: _Optional[int] = ..., token_estimate: _Optional[int] = ..., was_compressed: _Optional[bool] = ..., search_id: _Optional[str] = ...) -> None: ...

class RenderSkillDirectoryRequest(_message.Message):
    __slots__ = ("caller", "max_entries", "fields")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    max_entries: int
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., max_entries: _Optional[int] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class RenderSkillDirectoryResponse(_message.Message):
    __slots__ = ("text", "entry_count", "token_estimate")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    text: str
    entry_count: int
    token_estimate: int
    def __init__(self, text: _Optional[str] = ..., entry_count: _Optional[int] = ..., token_estimate: _Optional[int] = ...) -> None: ...

class WatchSkillEventsRequest(_message.Message):
    __slots__ = ("caller", "filter")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    filter: _events_pb2.EventFilter
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., filter: _Optional[_Union[_events_pb2.EventFilter, _Mapping]] = ...) -> None: ...

class WatchSkillEventsResponse(_message.Message):
    __slots__ = ("status", "event", "sent_at")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    status: _events_pb2.WatchStatus
    event: _events_pb2.Event
    sent_at: _timestamp_pb2.Timestamp
    def __init__(self, status: _Optional[_Union[_events_pb2.WatchStatus, _Mapping]] = ..., event: _Optional[_Union[_events_pb2.Event, _Mapping]] = ..., sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReportSkillOutcomeRequest(_message.Message):
    __slots__ = ("caller", "search_id", "skill", "outcome", "note", "idempotency_key")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    SKILL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    search_id: str
    skill: str
    outcome: _common_pb2.Outcome
    note: str
    idempotency_key: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., search_id: _Optional[str] = ..., skill: _Optional[str] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., note: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ReportSkillOutcomeResponse(_message.Message):
    __slots__ = ("duplicate", "learned")
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    LEARNED_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    learned: bool
    def __init__(self, duplicate: _Optional[bool] = ..., learned: _Optional[bool] = ...) -> None: ...
