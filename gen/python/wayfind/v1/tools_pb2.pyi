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

class LoadingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOADING_MODE_UNSPECIFIED: _ClassVar[LoadingMode]
    LOADING_MODE_ALWAYS: _ClassVar[LoadingMode]
    LOADING_MODE_DEFERRED: _ClassVar[LoadingMode]

class SideEffect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIDE_EFFECT_UNSPECIFIED: _ClassVar[SideEffect]
    SIDE_EFFECT_PURE: _ClassVar[SideEffect]
    SIDE_EFFECT_READ: _ClassVar[SideEffect]
    SIDE_EFFECT_WRITE: _ClassVar[SideEffect]
    SIDE_EFFECT_EXTERNAL: _ClassVar[SideEffect]
    SIDE_EFFECT_STATEFUL: _ClassVar[SideEffect]

class ActivationScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTIVATION_SCOPE_UNSPECIFIED: _ClassVar[ActivationScope]
    ACTIVATION_SCOPE_RUN: _ClassVar[ActivationScope]
    ACTIVATION_SCOPE_SESSION: _ClassVar[ActivationScope]

class TenantOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TENANT_ORIGIN_UNSPECIFIED: _ClassVar[TenantOrigin]
    TENANT_ORIGIN_API_KEY: _ClassVar[TenantOrigin]
    TENANT_ORIGIN_VISIBILITY_RULE: _ClassVar[TenantOrigin]
    TENANT_ORIGIN_USAGE: _ClassVar[TenantOrigin]
    TENANT_ORIGIN_EVENTS: _ClassVar[TenantOrigin]

class ToolSourceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_SOURCE_KIND_UNSPECIFIED: _ClassVar[ToolSourceKind]
    TOOL_SOURCE_KIND_CATALOG_FILE: _ClassVar[ToolSourceKind]
    TOOL_SOURCE_KIND_MCP_STDIO: _ClassVar[ToolSourceKind]
    TOOL_SOURCE_KIND_MCP_HTTP: _ClassVar[ToolSourceKind]
    TOOL_SOURCE_KIND_API: _ClassVar[ToolSourceKind]
LOADING_MODE_UNSPECIFIED: LoadingMode
LOADING_MODE_ALWAYS: LoadingMode
LOADING_MODE_DEFERRED: LoadingMode
SIDE_EFFECT_UNSPECIFIED: SideEffect
SIDE_EFFECT_PURE: SideEffect
SIDE_EFFECT_READ: SideEffect
SIDE_EFFECT_WRITE: SideEffect
SIDE_EFFECT_EXTERNAL: SideEffect
SIDE_EFFECT_STATEFUL: SideEffect
ACTIVATION_SCOPE_UNSPECIFIED: ActivationScope
ACTIVATION_SCOPE_RUN: ActivationScope
ACTIVATION_SCOPE_SESSION: ActivationScope
TENANT_ORIGIN_UNSPECIFIED: TenantOrigin
TENANT_ORIGIN_API_KEY: TenantOrigin
TENANT_ORIGIN_VISIBILITY_RULE: TenantOrigin
TENANT_ORIGIN_USAGE: TenantOrigin
TENANT_ORIGIN_EVENTS: TenantOrigin
TOOL_SOURCE_KIND_UNSPECIFIED: ToolSourceKind
TOOL_SOURCE_KIND_CATALOG_FILE: ToolSourceKind
TOOL_SOURCE_KIND_MCP_STDIO: ToolSourceKind
TOOL_SOURCE_KIND_MCP_HTTP: ToolSourceKind
TOOL_SOURCE_KIND_API: ToolSourceKind

class ToolExample(_message.Message):
    __slots__ = ("args", "description", "tags")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    args: _struct_pb2.Struct
    description: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, args: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., description: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "namespace", "title", "description", "tags", "side_effect", "loading_mode", "args_schema", "output_schema", "examples", "aliases", "source", "record_hash")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SIDE_EFFECT_FIELD_NUMBER: _ClassVar[int]
    LOADING_MODE_FIELD_NUMBER: _ClassVar[int]
    ARGS_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RECORD_HASH_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    title: str
    description: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    side_effect: SideEffect
    loading_mode: LoadingMode
    args_schema: _struct_pb2.Struct
    output_schema: _struct_pb2.Struct
    examples: _containers.RepeatedCompositeFieldContainer[ToolExample]
    aliases: _containers.RepeatedScalarFieldContainer[str]
    source: str
    record_hash: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., side_effect: _Optional[_Union[SideEffect, str]] = ..., loading_mode: _Optional[_Union[LoadingMode, str]] = ..., args_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., output_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., examples: _Optional[_Iterable[_Union[ToolExample, _Mapping]]] = ..., aliases: _Optional[_Iterable[str]] = ..., source: _Optional[str] = ..., record_hash: _Optional[str] = ...) -> None: ...

class RegisterToolsRequest(_message.Message):
    __slots__ = ("source", "namespace", "tools", "replace_source", "caller")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    source: str
    namespace: str
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    replace_source: bool
    caller: _common_pb2.CallerContext
    def __init__(self, source: _Optional[str] = ..., namespace: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., replace_source: _Optional[bool] = ..., caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ...) -> None: ...

class RegisterToolsResponse(_message.Message):
    __slots__ = ("added", "updated", "removed", "unchanged", "catalog_fingerprint")
    ADDED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    CATALOG_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    added: int
    updated: int
    removed: int
    unchanged: int
    catalog_fingerprint: str
    def __init__(self, added: _Optional[int] = ..., updated: _Optional[int] = ..., removed: _Optional[int] = ..., unchanged: _Optional[int] = ..., catalog_fingerprint: _Optional[str] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("caller", "page_size", "page_token", "show_all_tools")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SHOW_ALL_TOOLS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    page_size: int
    page_token: str
    show_all_tools: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., show_all_tools: _Optional[bool] = ...) -> None: ...

class ToolSummary(_message.Message):
    __slots__ = ("name", "description", "loading_mode", "visible", "source", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    LOADING_MODE_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    loading_mode: LoadingMode
    visible: bool
    source: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., loading_mode: _Optional[_Union[LoadingMode, str]] = ..., visible: _Optional[bool] = ..., source: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools", "next_page_token", "total_count")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSummary]
    next_page_token: str
    total_count: int
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_count: _Optional[int] = ...) -> None: ...

class SearchToolsRequest(_message.Message):
    __slots__ = ("caller", "query", "search_type", "limit", "include_always_loaded", "min_score")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SEARCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ALWAYS_LOADED_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    query: str
    search_type: _common_pb2.SearchType
    limit: int
    include_always_loaded: bool
    min_score: float
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., query: _Optional[str] = ..., search_type: _Optional[_Union[_common_pb2.SearchType, str]] = ..., limit: _Optional[int] = ..., include_always_loaded: _Optional[bool] = ..., min_score: _Optional[float] = ...) -> None: ...

class ToolMatch(_message.Message):
    __slots__ = ("name", "description", "score", "match_type", "loading_mode", "lexical_score", "semantic_score", "learned_score")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    MATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    LOADING_MODE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_SCORE_FIELD_NUMBER: _ClassVar[int]
    LEARNED_SCORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    score: float
    match_type: _common_pb2.MatchType
    loading_mode: LoadingMode
    lexical_score: float
    semantic_score: float
    learned_score: float
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., score: _Optional[float] = ..., match_type: _Optional[_Union[_common_pb2.MatchType, str]] = ..., loading_mode: _Optional[_Union[LoadingMode, str]] = ..., lexical_score: _Optional[float] = ..., semantic_score: _Optional[float] = ..., learned_score: _Optional[float] = ...) -> None: ...

class SearchToolsResponse(_message.Message):
    __slots__ = ("tools", "effective_search_type", "total_deferred", "match_quality", "semantic_status", "semantic_pending", "query_rewrites", "search_id", "semantic_texts_pending", "semantic_tier")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_SEARCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DEFERRED_FIELD_NUMBER: _ClassVar[int]
    MATCH_QUALITY_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_STATUS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_PENDING_FIELD_NUMBER: _ClassVar[int]
    QUERY_REWRITES_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TEXTS_PENDING_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_TIER_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolMatch]
    effective_search_type: _common_pb2.SearchType
    total_deferred: int
    match_quality: _common_pb2.MatchQuality
    semantic_status: _common_pb2.SemanticStatus
    semantic_pending: int
    query_rewrites: _containers.RepeatedCompositeFieldContainer[_common_pb2.QueryRewrite]
    search_id: str
    semantic_texts_pending: int
    semantic_tier: _common_pb2.SemanticTier
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolMatch, _Mapping]]] = ..., effective_search_type: _Optional[_Union[_common_pb2.SearchType, str]] = ..., total_deferred: _Optional[int] = ..., match_quality: _Optional[_Union[_common_pb2.MatchQuality, str]] = ..., semantic_status: _Optional[_Union[_common_pb2.SemanticStatus, str]] = ..., semantic_pending: _Optional[int] = ..., query_rewrites: _Optional[_Iterable[_Union[_common_pb2.QueryRewrite, _Mapping]]] = ..., search_id: _Optional[str] = ..., semantic_texts_pending: _Optional[int] = ..., semantic_tier: _Optional[_Union[_common_pb2.SemanticTier, str]] = ...) -> None: ...

class GetToolsRequest(_message.Message):
    __slots__ = ("caller", "names", "include_schemas", "include_examples")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    names: _containers.RepeatedScalarFieldContainer[str]
    include_schemas: bool
    include_examples: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., names: _Optional[_Iterable[str]] = ..., include_schemas: _Optional[bool] = ..., include_examples: _Optional[bool] = ...) -> None: ...

class GetToolsResponse(_message.Message):
    __slots__ = ("tools", "not_found")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    not_found: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., not_found: _Optional[_Iterable[str]] = ...) -> None: ...

class ActivateToolsRequest(_message.Message):
    __slots__ = ("caller", "names", "scope", "reason")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    names: _containers.RepeatedScalarFieldContainer[str]
    scope: ActivationScope
    reason: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., names: _Optional[_Iterable[str]] = ..., scope: _Optional[_Union[ActivationScope, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ActivateToolsResponse(_message.Message):
    __slots__ = ("activated", "already_visible", "scope")
    ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    ALREADY_VISIBLE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    activated: _containers.RepeatedScalarFieldContainer[str]
    already_visible: _containers.RepeatedScalarFieldContainer[str]
    scope: ActivationScope
    def __init__(self, activated: _Optional[_Iterable[str]] = ..., already_visible: _Optional[_Iterable[str]] = ..., scope: _Optional[_Union[ActivationScope, str]] = ...) -> None: ...

class DeactivateToolsRequest(_message.Message):
    __slots__ = ("caller", "names", "scope")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    names: _containers.RepeatedScalarFieldContainer[str]
    scope: ActivationScope
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., names: _Optional[_Iterable[str]] = ..., scope: _Optional[_Union[ActivationScope, str]] = ...) -> None: ...

class DeactivateToolsResponse(_message.Message):
    __slots__ = ("deactivated", "not_active")
    DEACTIVATED_FIELD_NUMBER: _ClassVar[int]
    NOT_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    deactivated: _containers.RepeatedScalarFieldContainer[str]
    not_active: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, deactivated: _Optional[_Iterable[str]] = ..., not_active: _Optional[_Iterable[str]] = ...) -> None: ...

class CheckToolCallRequest(_message.Message):
    __slots__ = ("caller", "name", "arguments", "scope")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    name: str
    arguments: _struct_pb2.Struct
    scope: ActivationScope
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., scope: _Optional[_Union[ActivationScope, str]] = ...) -> None: ...

class ArgumentProblem(_message.Message):
    __slots__ = ("path", "message")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    path: str
    message: str
    def __init__(self, path: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class CheckToolCallResponse(_message.Message):
    __slots__ = ("tool", "valid", "problems", "repair_message", "activated", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    REPAIR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: Tool
    valid: bool
    problems: _containers.RepeatedCompositeFieldContainer[ArgumentProblem]
    repair_message: str
    activated: bool
    scope: ActivationScope
    def __init__(self, tool: _Optional[_Union[Tool, _Mapping]] = ..., valid: _Optional[bool] = ..., problems: _Optional[_Iterable[_Union[ArgumentProblem, _Mapping]]] = ..., repair_message: _Optional[str] = ..., activated: _Optional[bool] = ..., scope: _Optional[_Union[ActivationScope, str]] = ...) -> None: ...

class CallToolRequest(_message.Message):
    __slots__ = ("caller", "name", "arguments", "scope", "timeout_seconds")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    name: str
    arguments: _struct_pb2.Struct
    scope: ActivationScope
    timeout_seconds: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., scope: _Optional[_Union[ActivationScope, str]] = ..., timeout_seconds: _Optional[int] = ...) -> None: ...

class CallToolResponse(_message.Message):
    __slots__ = ("tool", "source", "content", "structured_content", "is_error", "duration_ms")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    tool: str
    source: str
    content: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    structured_content: _struct_pb2.Struct
    is_error: bool
    duration_ms: int
    def __init__(self, tool: _Optional[str] = ..., source: _Optional[str] = ..., content: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., structured_content: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., is_error: _Optional[bool] = ..., duration_ms: _Optional[int] = ...) -> None: ...

class ResolveToolRequest(_message.Message):
    __slots__ = ("caller", "name", "scope")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    name: str
    scope: ActivationScope
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., name: _Optional[str] = ..., scope: _Optional[_Union[ActivationScope, str]] = ...) -> None: ...

class ResolveToolResponse(_message.Message):
    __slots__ = ("tool", "activated", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: Tool
    activated: bool
    scope: ActivationScope
    def __init__(self, tool: _Optional[_Union[Tool, _Mapping]] = ..., activated: _Optional[bool] = ..., scope: _Optional[_Union[ActivationScope, str]] = ...) -> None: ...

class RenderToolPromptRequest(_message.Message):
    __slots__ = ("caller", "include_directory", "directory_max_entries", "hint_message", "hint_limit", "max_examples_per_tool", "include_example_descriptions", "example_filter_tags", "dispatch")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    DIRECTORY_MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    HINT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HINT_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MAX_EXAMPLES_PER_TOOL_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EXAMPLE_DESCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FILTER_TAGS_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    include_directory: bool
    directory_max_entries: int
    hint_message: str
    hint_limit: int
    max_examples_per_tool: int
    include_example_descriptions: bool
    example_filter_tags: _containers.RepeatedScalarFieldContainer[str]
    dispatch: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., include_directory: _Optional[bool] = ..., directory_max_entries: _Optional[int] = ..., hint_message: _Optional[str] = ..., hint_limit: _Optional[int] = ..., max_examples_per_tool: _Optional[int] = ..., include_example_descriptions: _Optional[bool] = ..., example_filter_tags: _Optional[_Iterable[str]] = ..., dispatch: _Optional[bool] = ...) -> None: ...

class RenderToolPromptResponse(_message.Message):
    __slots__ = ("text", "token_estimate", "fingerprint", "visible_tools", "deferred_count", "hinted_tools")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_COUNT_FIELD_NUMBER: _ClassVar[int]
    HINTED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    text: str
    token_estimate: int
    fingerprint: str
    visible_tools: _containers.RepeatedScalarFieldContainer[str]
    deferred_count: int
    hinted_tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, text: _Optional[str] = ..., token_estimate: _Optional[int] = ..., fingerprint: _Optional[str] = ..., visible_tools: _Optional[_Iterable[str]] = ..., deferred_count: _Optional[int] = ..., hinted_tools: _Optional[_Iterable[str]] = ...) -> None: ...

class RenderToolPayloadRequest(_message.Message):
    __slots__ = ("caller", "provider", "native_search", "include_discovery_tools", "dispatch")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    NATIVE_SEARCH_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DISCOVERY_TOOLS_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    provider: _common_pb2.Provider
    native_search: bool
    include_discovery_tools: bool
    dispatch: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., provider: _Optional[_Union[_common_pb2.Provider, str]] = ..., native_search: _Optional[bool] = ..., include_discovery_tools: _Optional[bool] = ..., dispatch: _Optional[bool] = ...) -> None: ...

class ToolNameMapping(_message.Message):
    __slots__ = ("provider_name", "tool_name")
    PROVIDER_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    provider_name: str
    tool_name: str
    def __init__(self, provider_name: _Optional[str] = ..., tool_name: _Optional[str] = ...) -> None: ...

class RenderToolPayloadResponse(_message.Message):
    __slots__ = ("payload_json", "prefix_hash", "breakpoint_index", "token_estimate", "name_mappings")
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    PREFIX_HASH_FIELD_NUMBER: _ClassVar[int]
    BREAKPOINT_INDEX_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    NAME_MAPPINGS_FIELD_NUMBER: _ClassVar[int]
    payload_json: str
    prefix_hash: str
    breakpoint_index: int
    token_estimate: int
    name_mappings: _containers.RepeatedCompositeFieldContainer[ToolNameMapping]
    def __init__(self, payload_json: _Optional[str] = ..., prefix_hash: _Optional[str] = ..., breakpoint_index: _Optional[int] = ..., token_estimate: _Optional[int] = ..., name_mappings: _Optional[_Iterable[_Union[ToolNameMapping, _Mapping]]] = ...) -> None: ...

class GetDiscoveryToolsRequest(_message.Message):
    __slots__ = ("caller", "include_skill_tools", "dispatch")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SKILL_TOOLS_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    include_skill_tools: bool
    dispatch: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., include_skill_tools: _Optional[bool] = ..., dispatch: _Optional[bool] = ...) -> None: ...

class GetDiscoveryToolsResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    def __init__(self, tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ...) -> None: ...

class ListToolSourcesRequest(_message.Message):
    __slots__ = ("caller",)
    CALLER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ...) -> None: ...

class ListTenantsRequest(_message.Message):
    __slots__ = ("caller", "page_size", "page_token")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    page_size: int
    page_token: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class TenantInfo(_message.Message):
    __slots__ = ("tenant_id", "seen_in")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SEEN_IN_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    seen_in: _containers.RepeatedScalarFieldContainer[TenantOrigin]
    def __init__(self, tenant_id: _Optional[str] = ..., seen_in: _Optional[_Iterable[_Union[TenantOrigin, str]]] = ...) -> None: ...

class ListTenantsResponse(_message.Message):
    __slots__ = ("tenants", "next_page_token")
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[TenantInfo]
    next_page_token: str
    def __init__(self, tenants: _Optional[_Iterable[_Union[TenantInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ToolSource(_message.Message):
    __slots__ = ("name", "kind", "tool_count", "last_sync_time", "healthy", "last_error", "tenant_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_SYNC_TIME_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: ToolSourceKind
    tool_count: int
    last_sync_time: _timestamp_pb2.Timestamp
    healthy: bool
    last_error: str
    tenant_id: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[ToolSourceKind, str]] = ..., tool_count: _Optional[int] = ..., last_sync_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., healthy: _Optional[bool] = ..., last_error: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class ListToolSourcesResponse(_message.Message):
    __slots__ = ("sources",)
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedCompositeFieldContainer[ToolSource]
    def __init__(self, sources: _Optional[_Iterable[_Union[ToolSource, _Mapping]]] = ...) -> None: ...

class WatchToolEventsRequest(_message.Message):
    __slots__ = ("caller", "filter")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    filter: _events_pb2.EventFilter
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., filter: _Optional[_Union[_events_pb2.EventFilter, _Mapping]] = ...) -> None: ...

class WatchToolEventsResponse(_message.Message):
    __slots__ = ("status", "event", "sent_at")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    status: _events_pb2.WatchStatus
    event: _events_pb2.Event
    sent_at: _timestamp_pb2.Timestamp
    def __init__(self, status: _Optional[_Union[_events_pb2.WatchStatus, _Mapping]] = ..., event: _Optional[_Union[_events_pb2.Event, _Mapping]] = ..., sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReportToolOutcomeRequest(_message.Message):
    __slots__ = ("caller", "search_id", "tool", "outcome", "note", "idempotency_key")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallerContext
    search_id: str
    tool: str
    outcome: _common_pb2.Outcome
    note: str
    idempotency_key: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallerContext, _Mapping]] = ..., search_id: _Optional[str] = ..., tool: _Optional[str] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., note: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ReportToolOutcomeResponse(_message.Message):
    __slots__ = ("learned", "duplicate")
    LEARNED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    learned: bool
    duplicate: bool
    def __init__(self, learned: _Optional[bool] = ..., duplicate: _Optional[bool] = ...) -> None: ...
