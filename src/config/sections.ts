import type { PostgresConfig } from "../replication/replica.ts";
import type { ModelPrice } from "../usage/pricing.ts";
import { authConfig } from "./auth.ts";
import { DEFAULTS } from "./defaults.ts";
import { type PathResolver, resolvePath } from "./paths.ts";
import type { ConfigFile } from "./schema.ts";
import { serverConfig } from "./server.ts";
import { catalogsConfig, mcpServersConfig } from "./sources.ts";
import type { LearningConfig, ToolSearchConfig, WayfindConfig } from "./types.ts";

// The config file as written (snake_case) → WayfindConfig (camelCase), section by section, with
// defaults applied and paths made absolute. The larger sections have files of their own: auth.ts,
// server.ts, sources.ts (catalogs and MCP servers).

/** The config of file `raw`, whose relative paths start at `baseDir`. */
export function toConfig(raw: ConfigFile, baseDir: string, configFile: string | undefined): WayfindConfig {
  const pathFrom = (p: string) => resolvePath(baseDir, p);
  const toolSearch = toolSearchConfig(raw.tool_search, pathFrom);
  return {
    configFile,
    catalogs: catalogsConfig(raw.catalogs, toolSearch.defaultLoadingMode, pathFrom),
    toolSearch,
    policy: {
      allowed: raw.policy?.allowed ?? DEFAULTS.policy.allowed,
      denied: raw.policy?.denied ?? DEFAULTS.policy.denied,
      requireTags: raw.policy?.require_tags ?? DEFAULTS.policy.requireTags,
    },
    visibility: (raw.visibility ?? []).map((v) => ({
      match: { tenant: v.match.tenant, entitlements: v.match.entitlements },
      allow: v.allow ?? DEFAULTS.visibilityRule.allow,
      deny: v.deny ?? DEFAULTS.visibilityRule.deny,
    })),
    skillPacks: (raw.skill_packs ?? []).map((p) => ({
      name: p.name,
      path: pathFrom(p.path),
      scopeMode: p.scope_mode ?? DEFAULTS.skillPack.scopeMode,
      pinnedSkillNames: p.pinned_skill_names ?? DEFAULTS.skillPack.pinnedSkillNames,
      updateExistingPackSkills: p.update_existing_pack_skills ?? DEFAULTS.skillPack.updateExistingPackSkills,
    })),
    skills: {
      redaction: raw.skills?.redaction ?? DEFAULTS.skills.redaction,
      goodMatchScore: raw.skills?.good_match_score ?? DEFAULTS.skills.goodMatchScore,
    },
    pricing: pricingConfig(raw.pricing),
    usage: { retentionDays: raw.usage?.retention_days ?? DEFAULTS.usage.retentionDays },
    learning: learningConfig(raw.learning),
    storage: {
      postgres: raw.storage?.postgres && postgresConfig(raw.storage.postgres.url, raw.storage.postgres),
    },
    mcpServers: mcpServersConfig(raw.mcp_servers, toolSearch.defaultLoadingMode, pathFrom),
    lazyToolGroups: (raw.lazy_tool_groups ?? []).map((g) => ({
      name: g.name,
      tools: g.tools,
      triggers: { keywords: g.triggers.keywords ?? [], regexes: g.triggers.regexes ?? [] },
    })),
    aliases: raw.aliases ?? {},
    server: serverConfig(raw.server, pathFrom),
    auth: authConfig(raw.auth, pathFrom),
    logging: { level: raw.logging?.level ?? DEFAULTS.logging.level },
  };
}

/** `tool_search`, semantic search included. */
function toolSearchConfig(raw: ConfigFile["tool_search"], pathFrom: PathResolver): ToolSearchConfig {
  const ts = raw ?? {};
  return {
    enabled: ts.enabled ?? DEFAULTS.toolSearch.enabled,
    defaultLoadingMode: ts.default_loading_mode ?? DEFAULTS.toolSearch.defaultLoadingMode,
    alwaysLoadedPatterns: ts.always_loaded_patterns ?? DEFAULTS.toolSearch.alwaysLoadedPatterns,
    activationScope: ts.activation_scope ?? DEFAULTS.toolSearch.activationScope,
    dispatch: ts.dispatch ?? DEFAULTS.toolSearch.dispatch,
    preferredNamespaces: ts.preferred_namespaces ?? DEFAULTS.toolSearch.preferredNamespaces,
    maxSearchResults: ts.max_search_results ?? DEFAULTS.toolSearch.maxSearchResults,
    runActivationTtlSeconds: ts.run_activation_ttl_seconds ?? DEFAULTS.toolSearch.runActivationTtlSeconds,
    goodMatchScore: ts.good_match_score ?? DEFAULTS.toolSearch.goodMatchScore,
    synonyms: ts.synonyms ?? DEFAULTS.toolSearch.synonyms,
    semantic: {
      enabled: ts.semantic?.enabled ?? DEFAULTS.toolSearch.semantic.enabled,
      modelDir:
        ts.semantic?.model_dir === undefined
          ? DEFAULTS.toolSearch.semantic.modelDir
          : pathFrom(ts.semantic.model_dir),
      weight: ts.semantic?.weight ?? DEFAULTS.toolSearch.semantic.weight,
      threads: ts.semantic?.threads ?? DEFAULTS.toolSearch.semantic.threads,
      maxWaitMs: ts.semantic?.max_wait_ms ?? DEFAULTS.toolSearch.semantic.maxWaitMs,
    },
  };
}

/** `pricing`: the built-in prices unless the file lists its own; unset cache prices are the input's. */
function pricingConfig(raw: ConfigFile["pricing"]): ModelPrice[] {
  return (raw ?? DEFAULTS.pricing).map(
    (p): ModelPrice => ({
      provider: p.provider,
      model: p.model,
      input: p.input,
      output: p.output,
      cacheWrite: p.cache_write ?? p.input,
      // No fallback: a 1-hour write costs more than input (Anthropic 2×); unset, its cost is unknown.
      cacheWrite1h: p.cache_write_1h,
      cacheRead: p.cache_read ?? p.input,
    }),
  );
}

/** `learning`: learning from use. */
function learningConfig(raw: ConfigFile["learning"]): LearningConfig {
  return {
    enabled: raw?.enabled ?? DEFAULTS.learning.enabled,
    weight: raw?.weight ?? DEFAULTS.learning.weight,
    halfLifeDays: raw?.half_life_days ?? DEFAULTS.learning.halfLifeDays,
    selectionWindowSeconds: raw?.selection_window_seconds ?? DEFAULTS.learning.selectionWindowSeconds,
    maxRequestsPerTool: raw?.max_requests_per_tool ?? DEFAULTS.learning.maxRequestsPerTool,
    maxRowsPerTenant: raw?.max_rows_per_tenant ?? DEFAULTS.learning.maxRowsPerTenant,
    maxRequestsInMemory: raw?.max_requests_in_memory ?? DEFAULTS.learning.maxRequestsInMemory,
    lessonsPerSecond: raw?.lessons_per_second ?? DEFAULTS.learning.lessonsPerSecond,
    operatorTenants: raw?.operator_tenants ?? DEFAULTS.learning.operatorTenants,
  };
}

/** storage.postgres as written, its url aside. */
type PostgresFile = Omit<NonNullable<NonNullable<ConfigFile["storage"]>["postgres"]>, "url">;

/** `storage.postgres` with its defaults (also the environment's WAYFIND_DATABASE_URL's, overrides.ts). */
export function postgresConfig(url: string, raw: PostgresFile): PostgresConfig {
  const compaction = DEFAULTS.postgres.compaction;
  return {
    url,
    poolSize: raw.pool_size ?? DEFAULTS.postgres.poolSize,
    compaction: {
      everyChanges: raw.compaction?.every_changes ?? compaction.everyChanges,
      checkIntervalMs: millisecondsOf(raw.compaction?.check_interval_seconds) ?? compaction.checkIntervalMs,
      replicaTimeoutMs:
        millisecondsOf(raw.compaction?.replica_timeout_seconds) ?? compaction.replicaTimeoutMs,
    },
  };
}

function millisecondsOf(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : Math.round(seconds * 1000);
}
