import {
  MatchQuality,
  MatchType,
  Outcome as ProtoOutcome,
  Provider as ProtoProvider,
  QueryRewrite_Kind,
  SearchType,
  SemanticStatus,
  SemanticTier,
} from "../../gen/ts/wayfind/v1/common_pb.ts";
import { KeyOrigin } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { SkillFormat, SkillOrigin, SkillScope, TaskType } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import {
  ActivationScope,
  LoadingMode,
  SideEffect,
  ToolSourceKind,
} from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageGroupBy } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import type { ActivationScope as ActivationScopeName } from "../activation/index.ts";
import type { ApiKey } from "../auth/index.ts";
import type { LoadingMode as LoadingModeName, SideEffects } from "../discovery/index.ts";
import { invalidArgument } from "../errors.ts";
import type { Outcome } from "../learning/index.ts";
import { PAYLOAD_PROVIDERS, type PayloadProvider } from "../payload/index.ts";
import type {
  EffectiveSearchType as EffectiveSearchTypeName,
  MatchQuality as MatchQualityName,
  MatchType as MatchTypeName,
  SearchType as SearchTypeName,
} from "../search/answer.ts";
import type { QueryRewrite, SemanticReport } from "../search/scores.ts";
import type { ScopeKind, SkillOrigin as SkillOriginName, TaskType as TaskTypeName } from "../skills/index.ts";
import type { ToolSourceKind as SourceKindName } from "../sources/status.ts";
import type { Provider, UsageGroupBy as UsageGroupByName } from "../usage/index.ts";

// Every proto ↔ domain enum mapping of the API, in one place: the RPC handlers (src/server/services) and
// the MCP endpoint's meta tools (their arguments are the domain names) convert with these and nothing
// else.

/**
 * Two-way map between a proto enum and a domain string union. Proto enums are open: an unknown
 * number from a newer or broken client is INVALID_ARGUMENT, and 0 (UNSPECIFIED) means "not given".
 */
class EnumMap<D extends string> {
  private readonly toDomain = new Map<number, D>();
  private readonly protoByDomain = new Map<D, number>();

  constructor(pairs: readonly (readonly [number, D])[]) {
    for (const [proto, domain] of pairs) {
      this.toDomain.set(proto, domain);
      this.protoByDomain.set(domain, proto);
    }
  }

  /** The domain value, `undefined` for UNSPECIFIED; throws for an unknown number. */
  fromProto(value: number, field: string): D | undefined {
    if (value === 0) return undefined;
    const domain = this.toDomain.get(value);
    if (domain === undefined) {
      const description = `unknown enum value ${value}`;
      throw invalidArgument(`${field}: ${description}`, [{ field, description }]);
    }
    return domain;
  }

  toProto(value: D): number {
    return this.protoByDomain.get(value) ?? 0;
  }

  /** The proto value of a domain name given as text (a meta tool's argument); `undefined` for another. */
  protoOfName(name: unknown): number | undefined {
    return typeof name === "string" ? this.protoByDomain.get(name as D) : undefined;
  }
}

/** Search types a caller may ask for: FUZZY is only reported (FTS widens to it by itself). */
class RequestedSearchTypes extends EnumMap<SearchTypeName> {
  override fromProto(value: number, field: string): SearchTypeName | undefined {
    if (value === SearchType.FUZZY)
      throw invalidArgument(`${field} FUZZY is reported, not requested; use FTS (it widens to fuzzy itself)`);
    return super.fromProto(value, field);
  }
}

/** Tool and skill searches share the proto enum and the domain names. */
export const SEARCH_TYPES = new RequestedSearchTypes([
  [SearchType.FTS, "fts"],
  [SearchType.REGEX, "regex"],
  [SearchType.EXACT, "exact"],
]);
/** What a tool or skill search ran (the domain decides it, fuzzy included) → what the API reports. */
export const EFFECTIVE_SEARCH_TYPES: Readonly<Record<EffectiveSearchTypeName, SearchType>> = {
  fts: SearchType.FTS,
  regex: SearchType.REGEX,
  exact: SearchType.EXACT,
  fuzzy: SearchType.FUZZY,
};

// -- tools --------------------------------------------------------------------------------------------

export const ACTIVATION_SCOPES = new EnumMap<ActivationScopeName>([
  [ActivationScope.RUN, "run"],
  [ActivationScope.SESSION, "session"],
]);
export const LOADING_MODES = new EnumMap<LoadingModeName>([
  [LoadingMode.ALWAYS, "always"],
  [LoadingMode.DEFERRED, "deferred"],
]);
export const SIDE_EFFECTS = new EnumMap<SideEffects>([
  [SideEffect.PURE, "pure"],
  [SideEffect.READ, "read"],
  [SideEffect.WRITE, "write"],
  [SideEffect.EXTERNAL, "external"],
  [SideEffect.STATEFUL, "stateful"],
]);
/** How a tool or skill matched (domain) → what the API reports; several ranker details share one value. */
export const MATCH_TYPES: Readonly<Record<MatchTypeName, MatchType>> = {
  exact: MatchType.EXACT,
  exact_normalized: MatchType.EXACT,
  regex_full_name: MatchType.NAME,
  regex_name_prefix: MatchType.NAME_PREFIX,
  regex_name_substring: MatchType.NAME_SUBSTRING,
  regex_text: MatchType.DESCRIPTION,
  fts: MatchType.FTS,
  fts_fuzzy: MatchType.FUZZY,
  semantic: MatchType.SEMANTIC,
  learned: MatchType.LEARNED,
};
export const MATCH_QUALITIES: Readonly<Record<MatchQualityName, MatchQuality>> = {
  none: MatchQuality.NONE,
  weak: MatchQuality.WEAK,
  good: MatchQuality.GOOD,
};
export const SEMANTIC_STATUSES: Readonly<Record<SemanticReport["status"], SemanticStatus>> = {
  off: SemanticStatus.OFF,
  ready: SemanticStatus.READY,
  partial: SemanticStatus.PARTIAL,
  unavailable: SemanticStatus.UNAVAILABLE,
};
export const SEMANTIC_TIERS: Readonly<Record<SemanticReport["tier"], SemanticTier>> = {
  model: SemanticTier.MODEL,
  static: SemanticTier.STATIC,
  none: SemanticTier.UNSPECIFIED,
};
export const QUERY_REWRITE_KINDS: Readonly<Record<QueryRewrite["kind"], QueryRewrite_Kind>> = {
  typo: QueryRewrite_Kind.TYPO,
  synonym: QueryRewrite_Kind.SYNONYM,
};
export const SOURCE_KINDS: Readonly<Record<SourceKindName, ToolSourceKind>> = {
  catalog_file: ToolSourceKind.CATALOG_FILE,
  mcp_stdio: ToolSourceKind.MCP_STDIO,
  mcp_http: ToolSourceKind.MCP_HTTP,
  api: ToolSourceKind.API,
};

// -- skills -------------------------------------------------------------------------------------------

export const TASK_TYPES = new EnumMap<TaskTypeName>([
  [TaskType.BROWSER, "browser"],
  [TaskType.API, "api"],
  [TaskType.CODE, "code"],
  [TaskType.DOMAIN, "domain"],
  [TaskType.UNKNOWN, "unknown"],
]);
export const SKILL_ORIGINS = new EnumMap<SkillOriginName>([
  [SkillOrigin.PACK, "pack"],
  [SkillOrigin.LEARNED, "learned"],
]);
export const SKILL_SCOPES = new EnumMap<ScopeKind>([
  [SkillScope.PROJECT, "project"],
  [SkillScope.TENANT, "tenant"],
  [SkillScope.GLOBAL, "global"],
]);
/** RAW (or UNSPECIFIED) is the skill as stored; INJECTION is the text to put in a prompt. */
export const SKILL_FORMATS = new EnumMap<"raw" | "injection">([
  [SkillFormat.RAW, "raw"],
  [SkillFormat.INJECTION, "injection"],
]);

// -- learning -----------------------------------------------------------------------------------------

export const OUTCOMES = new EnumMap<Outcome>([
  [ProtoOutcome.SUCCEEDED, "succeeded"],
  [ProtoOutcome.FAILED, "failed"],
  [ProtoOutcome.WRONG_TOOL, "wrong_tool"],
]);

// -- usage --------------------------------------------------------------------------------------------

export const PROVIDERS = new EnumMap<Provider>([
  [ProtoProvider.ANTHROPIC, "anthropic"],
  [ProtoProvider.OPENAI, "openai"],
  [ProtoProvider.GEMINI, "gemini"],
  [ProtoProvider.BEDROCK, "bedrock"],
  [ProtoProvider.OTHER, "other"],
]);
/** The providers a tool payload is rendered for, a subset of PROVIDERS. */
export function payloadProviderFromProto(value: number): PayloadProvider {
  const provider = PROVIDERS.fromProto(value, "provider");
  if (!isPayloadProvider(provider))
    throw invalidArgument("provider must be PROVIDER_ANTHROPIC, PROVIDER_OPENAI or PROVIDER_GEMINI");
  return provider;
}

function isPayloadProvider(provider: Provider | undefined): provider is PayloadProvider {
  return (PAYLOAD_PROVIDERS as readonly (Provider | undefined)[]).includes(provider);
}

export const USAGE_GROUP_BY = new EnumMap<UsageGroupByName>([
  [UsageGroupBy.SESSION, "session"],
  [UsageGroupBy.RUN, "run"],
  [UsageGroupBy.PROVIDER, "provider"],
  [UsageGroupBy.MODEL, "model"],
  [UsageGroupBy.DAY, "day"],
]);

// -- keys ---------------------------------------------------------------------------------------------

export const KEY_ORIGINS: Readonly<Record<ApiKey["origin"], KeyOrigin>> = {
  config: KeyOrigin.CONFIG,
  created: KeyOrigin.CREATED,
};
