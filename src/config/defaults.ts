import { availableParallelism } from "node:os";
import { checkoutPath } from "../checkout.ts";
import { DEFAULT_GOOD_MATCH_SCORE } from "../search/scores.ts";
import type {
  ActivationScope,
  LearningConfig,
  LoadingMode,
  LogLevel,
  ScopeMode,
  SkillsConfig,
  ToolSearchConfig,
  UsageConfig,
} from "./types.ts";

/**
 * Every default of the configuration, in one place. wayfind.example.yaml documents the same values;
 * a test keeps the two in step.
 */
export const DEFAULTS = {
  catalog: {
    /** Unset `loading_mode` of a catalog or MCP server falls back to `tool_search.default_loading_mode`. */
    alwaysLoaded: [] as readonly string[],
    deferred: [] as readonly string[],
    tags: [] as readonly string[],
  },
  toolSearch: {
    enabled: true,
    defaultLoadingMode: "deferred" as LoadingMode,
    alwaysLoadedPatterns: [],
    activationScope: "run" as ActivationScope,
    dispatch: false,
    preferredNamespaces: [],
    maxSearchResults: 10,
    /** Run-scoped activations expire after an hour without use. */
    runActivationTtlSeconds: 3600,
    goodMatchScore: DEFAULT_GOOD_MATCH_SCORE,
    synonyms: {},
    semantic: {
      /** Hybrid search is on unless `tool_search.semantic.enabled: false` says otherwise. */
      enabled: true,
      /** The model shipped in the repository (models/all-MiniLM-L6-v2: int8, Apache-2.0, see its README). */
      modelDir: checkoutPath("models/all-MiniLM-L6-v2"),
      /**
       * The lexical share of the fused score for a query whose words matched nothing well; it grows with
       * the best lexical score (src/semantic/meaning-search.ts ADAPTIVE_SLOPE). bench/semantic.ts chose it
       * on even-position public queries, keeping every set at or above lexical-only.
       */
      weight: 0.3,
      /** Every core: inference runs in its own worker thread, off the event loop. */
      threads: availableParallelism(),
      /**
       * A search waits this long for its request's meaning (bench/hybrid-load.ts chose it): long enough
       * for a request never seen to be embedded on an idle server, short enough that a busy one
       * answers by words rather than queueing.
       */
      maxWaitMs: 40,
    },
  } satisfies ToolSearchConfig,
  policy: {
    allowed: ["*"] as readonly string[],
    denied: [] as readonly string[],
    requireTags: [] as readonly string[],
  },
  visibilityRule: {
    /** A rule that only denies leaves everything else visible. */
    allow: ["*"] as readonly string[],
    deny: [] as readonly string[],
  },
  skillPack: {
    /** A pack loaded from the server's config belongs to no caller, so it is global unless told otherwise. */
    scopeMode: "global" as ScopeMode,
    pinnedSkillNames: [] as readonly string[],
    updateExistingPackSkills: true,
  },
  skills: { redaction: true, goodMatchScore: DEFAULT_GOOD_MATCH_SCORE } satisfies SkillsConfig,
  /** Unset cache prices fall back to the input price (no discount assumed). */
  pricing: [],
  /** Usage records are kept 30 days after recording, then summed per day (summaries stay exact per day). */
  usage: { retentionDays: 30 } satisfies UsageConfig,
  learning: {
    enabled: true,
    weight: 0.5,
    halfLifeDays: 30,
    selectionWindowSeconds: 600,
    maxRequestsPerTool: 64,
    maxRowsPerTenant: 20_000,
    // Bounds the memory of tenants' models, vectors included (what it holds: docs/search.md).
    maxRequestsInMemory: 100_000,
    lessonsPerSecond: 20,
    operatorTenants: [] as readonly string[],
  } satisfies LearningConfig,
  postgres: {
    poolSize: 10,
    /** A snapshot per 10,000 changes keeps the log small and a new replica's start short. */
    compaction: { everyChanges: 10_000, checkIntervalMs: 60_000, replicaTimeoutMs: 15 * 60_000 },
  },
  mcpServer: {
    syncIntervalSeconds: 0,
    callTimeoutSeconds: 60,
    maxConcurrentCalls: 16,
    breakerFailures: 5,
    breakerOpenSeconds: 30,
    tenantCredentials: {},
    requireTenantCredentials: false,
  },
  server: {
    host: "127.0.0.1",
    port: 50051,
    /** Relative to the config file's folder, or to the working directory when there is no file. */
    dataDir: ".wayfind",
    /** 4 MiB, gRPC's usual limit. */
    maxMessageBytes: 4 * 1024 * 1024,
    /** First bytes, and for HTTP/2 the preface and SETTINGS, of a new connection. */
    handshakeTimeoutSeconds: 10,
    /** HTTP/1.1 request headers; the first body bytes (or end) of an HTTP/2 stream. */
    requestHeaderTimeoutSeconds: 10,
    /** The whole request body of a call that sends one message (unary, server streaming). */
    requestBodyTimeoutSeconds: 30,
    /** A connection with no call in flight; watch streams keep theirs busy. */
    idleTimeoutSeconds: 300,
    /** Open connections; more are refused, with a warning in the log. */
    maxConnections: 4096,
    eventRetention: { maxEvents: 100_000, maxAgeHours: 168 },
    metrics: true,
    mcp: {
      enabled: true,
      maxSessions: 1_000,
      maxSessionsPerCredential: 250,
      maxSessionsPerTenant: 500,
      sessionIdleTimeoutSeconds: 1_800,
      toolList: "fixed",
    },
    /** No other origin's pages; a browser may reuse a preflight's answer this long (it caps it lower itself). */
    cors: { allowedOrigins: [] as readonly string[], maxAgeSeconds: 600 },
    /** IP addresses and loopback names only, where the server must be strict (docs/security.md). */
    allowedHosts: [] as readonly string[],
    console: true,
  },
  logging: { level: "info" as LogLevel },
  /** Revoked and expired API keys stay listed (and are refused with their reason) 30 days, then go. */
  auth: { keyRetentionDays: 30 },
} as const;
