from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_TYPE_UNSPECIFIED: _ClassVar[SearchType]
    SEARCH_TYPE_FTS: _ClassVar[SearchType]
    SEARCH_TYPE_REGEX: _ClassVar[SearchType]
    SEARCH_TYPE_EXACT: _ClassVar[SearchType]
    SEARCH_TYPE_FUZZY: _ClassVar[SearchType]

class MatchType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_TYPE_UNSPECIFIED: _ClassVar[MatchType]
    MATCH_TYPE_EXACT: _ClassVar[MatchType]
    MATCH_TYPE_ALIAS: _ClassVar[MatchType]
    MATCH_TYPE_NAME: _ClassVar[MatchType]
    MATCH_TYPE_NAME_PREFIX: _ClassVar[MatchType]
    MATCH_TYPE_NAME_SUBSTRING: _ClassVar[MatchType]
    MATCH_TYPE_DESCRIPTION: _ClassVar[MatchType]
    MATCH_TYPE_FTS: _ClassVar[MatchType]
    MATCH_TYPE_FUZZY: _ClassVar[MatchType]
    MATCH_TYPE_SEMANTIC: _ClassVar[MatchType]
    MATCH_TYPE_LEARNED: _ClassVar[MatchType]

class MatchQuality(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_QUALITY_UNSPECIFIED: _ClassVar[MatchQuality]
    MATCH_QUALITY_NONE: _ClassVar[MatchQuality]
    MATCH_QUALITY_WEAK: _ClassVar[MatchQuality]
    MATCH_QUALITY_GOOD: _ClassVar[MatchQuality]

class SemanticStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEMANTIC_STATUS_UNSPECIFIED: _ClassVar[SemanticStatus]
    SEMANTIC_STATUS_OFF: _ClassVar[SemanticStatus]
    SEMANTIC_STATUS_READY: _ClassVar[SemanticStatus]
    SEMANTIC_STATUS_PARTIAL: _ClassVar[SemanticStatus]
    SEMANTIC_STATUS_UNAVAILABLE: _ClassVar[SemanticStatus]

class SemanticTier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEMANTIC_TIER_UNSPECIFIED: _ClassVar[SemanticTier]
    SEMANTIC_TIER_MODEL: _ClassVar[SemanticTier]
    SEMANTIC_TIER_STATIC: _ClassVar[SemanticTier]

class Provider(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROVIDER_UNSPECIFIED: _ClassVar[Provider]
    PROVIDER_ANTHROPIC: _ClassVar[Provider]
    PROVIDER_OPENAI: _ClassVar[Provider]
    PROVIDER_GEMINI: _ClassVar[Provider]
    PROVIDER_BEDROCK: _ClassVar[Provider]
    PROVIDER_OTHER: _ClassVar[Provider]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_SUCCEEDED: _ClassVar[Outcome]
    OUTCOME_FAILED: _ClassVar[Outcome]
    OUTCOME_WRONG_TOOL: _ClassVar[Outcome]
SEARCH_TYPE_UNSPECIFIED: SearchType
SEARCH_TYPE_FTS: SearchType
SEARCH_TYPE_REGEX: SearchType
SEARCH_TYPE_EXACT: SearchType
SEARCH_TYPE_FUZZY: SearchType
MATCH_TYPE_UNSPECIFIED: MatchType
MATCH_TYPE_EXACT: MatchType
MATCH_TYPE_ALIAS: MatchType
MATCH_TYPE_NAME: MatchType
MATCH_TYPE_NAME_PREFIX: MatchType
MATCH_TYPE_NAME_SUBSTRING: MatchType
MATCH_TYPE_DESCRIPTION: MatchType
MATCH_TYPE_FTS: MatchType
MATCH_TYPE_FUZZY: MatchType
MATCH_TYPE_SEMANTIC: MatchType
MATCH_TYPE_LEARNED: MatchType
MATCH_QUALITY_UNSPECIFIED: MatchQuality
MATCH_QUALITY_NONE: MatchQuality
MATCH_QUALITY_WEAK: MatchQuality
MATCH_QUALITY_GOOD: MatchQuality
SEMANTIC_STATUS_UNSPECIFIED: SemanticStatus
SEMANTIC_STATUS_OFF: SemanticStatus
SEMANTIC_STATUS_READY: SemanticStatus
SEMANTIC_STATUS_PARTIAL: SemanticStatus
SEMANTIC_STATUS_UNAVAILABLE: SemanticStatus
SEMANTIC_TIER_UNSPECIFIED: SemanticTier
SEMANTIC_TIER_MODEL: SemanticTier
SEMANTIC_TIER_STATIC: SemanticTier
PROVIDER_UNSPECIFIED: Provider
PROVIDER_ANTHROPIC: Provider
PROVIDER_OPENAI: Provider
PROVIDER_GEMINI: Provider
PROVIDER_BEDROCK: Provider
PROVIDER_OTHER: Provider
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_SUCCEEDED: Outcome
OUTCOME_FAILED: Outcome
OUTCOME_WRONG_TOOL: Outcome

class CallerContext(_message.Message):
    __slots__ = ("tenant_id", "project_id", "user_id", "session_id", "run_id", "entitlements", "narrow_to_tools")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ENTITLEMENTS_FIELD_NUMBER: _ClassVar[int]
    NARROW_TO_TOOLS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    project_id: str
    user_id: str
    session_id: str
    run_id: str
    entitlements: _containers.RepeatedScalarFieldContainer[str]
    narrow_to_tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tenant_id: _Optional[str] = ..., project_id: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., run_id: _Optional[str] = ..., entitlements: _Optional[_Iterable[str]] = ..., narrow_to_tools: _Optional[_Iterable[str]] = ...) -> None: ...

class QueryRewrite(_message.Message):
    __slots__ = ("to", "kind")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[QueryRewrite.Kind]
        KIND_TYPO: _ClassVar[QueryRewrite.Kind]
        KIND_SYNONYM: _ClassVar[QueryRewrite.Kind]
    KIND_UNSPECIFIED: QueryRewrite.Kind
    KIND_TYPO: QueryRewrite.Kind
    KIND_SYNONYM: QueryRewrite.Kind
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    to: str
    kind: QueryRewrite.Kind
    def __init__(self, to: _Optional[str] = ..., kind: _Optional[_Union[QueryRewrite.Kind, str]] = ..., **kwargs) -> None: ...
