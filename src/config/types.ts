import type { Role } from "../caller/caller.ts";
import type { PostgresConfig } from "../replication/replica.ts";
import type { ModelPrice } from "../usage/pricing.ts";

/**
 * The validated configuration, camelCase, with every default applied (see defaults.ts) and every
 * relative path resolved against the config file's folder. YAML key names are in docs/design.md §6.
 */

export type LoadingMode = "always" | "deferred";
export type ActivationScope = "run" | "session";
export type ScopeMode = "project" | "tenant" | "global";
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export interface ToolExampleConfig {
  readonly args: Readonly<Record<string, unknown>>;
  readonly description: string;
  readonly tags: readonly string[];
}

/** Options shared by every tool source (catalog files and MCP servers). */
export interface ToolSourceOptions {
  /** Loading mode of the source's tools unless listed in `alwaysLoaded` / `deferred`. */
  readonly loadingMode: LoadingMode;
  /** Tool names or globs (matched against the namespaced name) that are always loaded. */
  readonly alwaysLoaded: readonly string[];
  /** Tool names or globs that are deferred (wins over `loadingMode`, loses to `alwaysLoaded`). */
  readonly deferred: readonly string[];
  /** Extra examples per tool name, appended to the tool's own. */
  readonly examples: Readonly<Record<string, readonly ToolExampleConfig[]>>;
  /** Tags added to every tool of the source. */
  readonly tags: readonly string[];
}

export interface CatalogConfig extends ToolSourceOptions {
  /** Absolute path of a JSONL / JSON / YAML file of tools. */
  readonly path: string;
  /** Optional prefix: tools are named `<namespace>.<name>`; undefined = names as written. */
  readonly namespace: string | undefined;
  /**
   * A tool whose args schema is not a JSON Schema fails the file ("refuse", the default), or loads
   * with a warning ("warn": a file copied from an MCP server you do not control).
   */
  readonly invalidSchemas: "refuse" | "warn";
}

export interface ToolSearchConfig {
  readonly enabled: boolean;
  readonly defaultLoadingMode: LoadingMode;
  readonly alwaysLoadedPatterns: readonly string[];
  readonly activationScope: ActivationScope;
  /** RenderToolPayload in dispatch mode unless a request asks for it itself (docs/configuration.md "Dispatch mode"). */
  readonly dispatch: boolean;
  readonly preferredNamespaces: readonly string[];
  readonly maxSearchResults: number;
  readonly runActivationTtlSeconds: number;
  /** A search whose best hit scores below this reports MATCH_QUALITY_WEAK (docs/search.md "Scores"). */
  readonly goodMatchScore: number;
  /** The operator's abbreviations and synonyms: word → readings (beside the built-in list). */
  readonly synonyms: Readonly<Record<string, readonly string[]>>;
  /** Semantic ranking (`tool_search.semantic`): on by default with the shipped model. */
  readonly semantic: SemanticSearchConfig;
}

/** Semantic ranking of tools (src/semantic), fused into FTS searches. */
interface SemanticSearchConfig {
  readonly enabled: boolean;
  /** Absolute path of a sentence-embedding model folder of the all-MiniLM-L6-v2 layout (default: the shipped one). */
  readonly modelDir: string;
  /** The lexical share of the fused score at the least (it grows with the best lexical score), in [0, 1]. */
  readonly weight: number;
  /** Threads of inference: the model's thread pool (default the machine's cores). */
  readonly threads: number;
  /**
   * How long a search waits for the model to read its request: a request the model is not expected to
   * embed within it is read by the model's static tier (or, without one, ranked by words: semantic_status
   * PARTIAL); the embedding still completes for the next time.
   */
  readonly maxWaitMs: number;
}

export interface PolicyConfig {
  readonly allowed: readonly string[];
  readonly denied: readonly string[];
  readonly requireTags: readonly string[];
}

export interface VisibilityRuleConfig {
  /** Undefined fields match any caller; `entitlements` matches a caller holding all of them. */
  readonly match: {
    readonly tenant: string | undefined;
    readonly entitlements: readonly string[] | undefined;
  };
  readonly allow: readonly string[];
  readonly deny: readonly string[];
}

export interface SkillPackConfig {
  readonly name: string;
  /** Absolute path of the pack folder or file. */
  readonly path: string;
  readonly scopeMode: ScopeMode;
  readonly pinnedSkillNames: readonly string[];
  readonly updateExistingPackSkills: boolean;
}

export interface SkillsConfig {
  readonly redaction: boolean;
  /** A skill search whose best hit scores below this reports MATCH_QUALITY_WEAK. */
  readonly goodMatchScore: number;
}

/** A secret by reference: an environment variable, or a file (an absolute path) holding it. */
export type SecretRef = { readonly env: string } | { readonly file: string };

/** What one tenant's calls of an MCP server send: extra headers (HTTP) or environment (stdio). */
export interface TenantCredentials {
  readonly headers: Readonly<Record<string, SecretRef>>;
  readonly env: Readonly<Record<string, SecretRef>>;
}

interface McpServerBase extends ToolSourceOptions {
  readonly name: string;
  /**
   * The prefix of the names of the server's tools, prompts, resources and resource templates on
   * wayfind (`<namespace>.<name>`): the server's name unless set; "" = the names as the server wrote them.
   */
  readonly namespace: string;
  /** Seconds between re-syncs of the tool list; 0 = only at start. */
  readonly syncIntervalSeconds: number;
  /** How long one executed call (CallTool, MCP tool_call) may take unless the caller asks for less. */
  readonly callTimeoutSeconds: number;
  /** Calls of the server's tools in flight at once; more wait their turn, within their timeout. */
  readonly maxConcurrentCalls: number;
  /** Failures in a row (unreachable, timed out, garbage) that open the server's breaker for a tenant. */
  readonly breakerFailures: number;
  /** How long an open breaker refuses calls before one is let through to try again. */
  readonly breakerOpenSeconds: number;
  /** By tenant: the credentials its calls carry, on a session of their own. */
  readonly tenantCredentials: Readonly<Record<string, TenantCredentials>>;
  /** A tenant without credentials here may not call the server (else it uses the server's own). */
  readonly requireTenantCredentials: boolean;
}

interface McpStdioServerConfig extends McpServerBase {
  readonly transport: "stdio";
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Absolute working directory; undefined = the server's own. */
  readonly cwd: string | undefined;
}

interface McpHttpServerConfig extends McpServerBase {
  /** Streamable HTTP, or the older HTTP+SSE transport (MCP 2024-11-05: a GET event stream, POSTs). */
  readonly transport: "http" | "sse";
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

export interface McpEndpointConfig {
  readonly enabled: boolean;
  /**
   * Sessions open at once. An initialize past this closes a session of the tenant holding the most
   * (the one idle longest), so a tenant within its share never loses one to another's.
   */
  readonly maxSessions: number;
  /** Sessions one credential may hold; its initialize past this closes its own session idle longest. */
  readonly maxSessionsPerCredential: number;
  /** Sessions one tenant's credentials may hold together; past this, the tenant's session idle longest goes. */
  readonly maxSessionsPerTenant: number;
  /** A session nobody used for this long is closed (its client initializes again). */
  readonly sessionIdleTimeoutSeconds: number;
  /** What a session's `tools/list` holds unless its URL asks otherwise (docs/mcp.md). */
  readonly toolList: McpToolList;
}

/**
 * `fixed`: the meta tools and the always-visible tools, never changing within a session. `activated`:
 * those plus the tools activated in the session (by tool_get or tool_call), announced with
 * `notifications/tools/list_changed`.
 */
export type McpToolList = "fixed" | "activated";

export interface CorsConfig {
  /** Origins (`https://host:port`) whose pages may call the API; "*" = any; empty = none but the console's own. */
  readonly allowedOrigins: readonly string[];
  readonly maxAgeSeconds: number;
}

export interface LazyToolGroupConfig {
  readonly name: string;
  /** Tool names or globs activated together when a trigger fires. */
  readonly tools: readonly string[];
  readonly triggers: {
    /** Case-insensitive words or phrases. */
    readonly keywords: readonly string[];
    /** RE2 syntax (checked at load time). */
    readonly regexes: readonly string[];
  };
}

export interface UsageConfig {
  /** Days a usage record (and its idempotency key) is kept after recording; its per-day sums stay. */
  readonly retentionDays: number;
}

/** Learning from use (docs/search.md "Learning from use"): each tenant's choices teach its own ranking. */
export interface LearningConfig {
  readonly enabled: boolean;
  /** The most a learned score of 1 moves a hit: that share of the way to a score of 1. */
  readonly weight: number;
  /** Days after which a choice counts half. */
  readonly halfLifeDays: number;
  /** A hit chosen this long after its search still counts as chosen from it. */
  readonly selectionWindowSeconds: number;
  /** Requests kept per tool and tenant (the heaviest). */
  readonly maxRequestsPerTool: number;
  /** Learned rows kept per tenant (the most recently taught). */
  readonly maxRowsPerTenant: number;
  /**
   * Learned requests held in memory over all tenants' models: past it, the models searched least
   * recently are dropped (read again, with their stored vectors, when next searched).
   */
  readonly maxRequestsInMemory: number;
  /** Lessons one principal may teach per second, sustained (bursts of ten times that). */
  readonly lessonsPerSecond: number;
  /**
   * Tenants whose lessons also teach every other tenant's search, at half strength: the operator's own
   * agents, a curated tenant. Empty by default, so no tenant's traffic reaches another's ranking.
   */
  readonly operatorTenants: readonly string[];
}

/** Where the state lives when several replicas share it (docs/replicas.md); absent = SQLite alone. */
interface StorageConfig {
  readonly postgres: PostgresConfig | undefined;
}

interface EventRetentionConfig {
  readonly maxEvents: number;
  readonly maxAgeHours: number;
}

interface ServerConfig {
  readonly host: string;
  readonly port: number;
  /** Absolute path. */
  readonly dataDir: string;
  readonly maxMessageBytes: number;
  /** A new connection must send its first bytes (HTTP/2: its preface and SETTINGS) within this. */
  readonly handshakeTimeoutSeconds: number;
  /** HTTP/1.1 request headers, and the first body bytes of an HTTP/2 stream, must arrive within this. */
  readonly requestHeaderTimeoutSeconds: number;
  /**
   * The whole request body of a unary or server-streaming call must arrive within this (from its
   * headers), else DEADLINE_EXCEEDED; client- and bidi-streaming calls send theirs over time.
   */
  readonly requestBodyTimeoutSeconds: number;
  /** A connection without a call in flight for this long is closed (HTTP/2: GOAWAY). */
  readonly idleTimeoutSeconds: number;
  /** Connections beyond this many open ones are refused. */
  readonly maxConnections: number;
  readonly eventRetention: EventRetentionConfig;
  /** Serve Prometheus metrics at `GET /metrics` on the service port. */
  readonly metrics: boolean;
  /** The MCP endpoint at `/mcp` on the service port (docs/mcp.md). */
  readonly mcp: McpEndpointConfig;
  /** Web pages on other origins that may call the API (docs/console.md). */
  readonly cors: CorsConfig;
  /**
   * Names the server may be reached by besides IP addresses and loopback names (lower-case). A
   * server that listens on loopback or serves calls without credentials answers no other name; any
   * other server answers any name unless this lists some (docs/security.md, DNS rebinding).
   */
  readonly allowedHosts: readonly string[];
  /** Serve the web console at `GET /console`. */
  readonly console: boolean;
  /** TLS on the port (gRPC, Connect and gRPC-Web alike); undefined = cleartext (h2c and HTTP/1.1). */
  readonly tls: TlsConfig | undefined;
}

/** What a credential grants (API keys, mTLS principals): tenant "" only for an admin, the operator. */
export interface GrantConfig {
  readonly tenant: string;
  readonly roles: readonly Role[];
  readonly entitlements: readonly string[];
  /** Projects the credential may act in; empty = any. */
  readonly projects: readonly string[];
}

export interface ApiKeyConfig extends GrantConfig {
  readonly id: string;
  readonly keySha256: string;
  readonly expiresAtMs: number | undefined;
}

interface JwtClaimsConfig {
  readonly tenant: string;
  readonly user: string;
  readonly entitlements: string;
  readonly roles: string;
  readonly projects: string;
}

export interface JwtConfig {
  /** JWKS to fetch (cached, refetched on an unknown `kid`); or `publicKeys`. */
  readonly jwksUrl: string | undefined;
  /** Inline keys: JWK objects or PEM (SPKI) texts. */
  readonly publicKeys: readonly (string | Readonly<Record<string, unknown>>)[];
  readonly issuer: string;
  readonly audience: readonly string[];
  readonly algorithms: readonly string[];
  readonly clockSkewSeconds: number;
  /** After a JWKS fetch, no other for this long (an unknown `kid` waits for it). */
  readonly jwksCooldownSeconds: number;
  /** Claim names (a dotted path reads a nested claim). */
  readonly claims: JwtClaimsConfig;
  /** Roles of a token without a roles claim. */
  readonly defaultRoles: readonly Role[];
}

export interface MtlsConfig {
  /** CA bundle client certificates must chain to (absolute path); or server.tls.client_ca_file. */
  readonly clientCa: string | undefined;
  readonly principalFrom: "subject_cn" | "san_uri";
  /** Certificate name (CN or SAN URI) → what it grants; a verified certificate not listed is refused. */
  readonly principals: Readonly<Record<string, GrantConfig>>;
}

export interface AuthLimitsConfig {
  /** Sustained calls per second per principal; undefined = unlimited. */
  readonly callsPerSecond: number | undefined;
  /** Calls a principal may make at once above the sustained rate. */
  readonly burst: number;
  /** Open watch streams per principal; undefined = unlimited. */
  readonly watchStreams: number | undefined;
}

export interface AuthConfig {
  readonly apiKeys: readonly ApiKeyConfig[];
  readonly jwt: JwtConfig | undefined;
  readonly mtls: MtlsConfig | undefined;
  /**
   * Calls without credentials act as their CallerContext says (local development). Undefined = only
   * when the server listens on loopback; on any other host it takes `insecureAllowUnauthenticated`.
   */
  readonly allowUnauthenticated: boolean | undefined;
  /** `serve --insecure-allow-unauthenticated`: the operator accepts unauthenticated calls off loopback. */
  readonly insecureAllowUnauthenticated: boolean;
  /** Days a revoked or expired API key is kept (listed, refused with its reason) before it is deleted. */
  readonly keyRetentionDays: number;
  readonly limits: AuthLimitsConfig;
}

export interface TlsConfig {
  /** Absolute paths of PEM files; reloaded on SIGHUP. */
  readonly certFile: string;
  readonly keyFile: string;
  /** CA bundle to verify client certificates with (mTLS); undefined = none asked for. */
  readonly clientCaFile: string | undefined;
}

interface LoggingConfig {
  readonly level: LogLevel;
}

export interface WayfindConfig {
  /** Absolute path of the file this came from; undefined for defaults only. */
  readonly configFile: string | undefined;
  readonly catalogs: readonly CatalogConfig[];
  readonly toolSearch: ToolSearchConfig;
  readonly policy: PolicyConfig;
  readonly visibility: readonly VisibilityRuleConfig[];
  readonly skillPacks: readonly SkillPackConfig[];
  readonly skills: SkillsConfig;
  /** Price overrides, already in the pricing domain's type (unset cache prices filled in by loadConfig). */
  readonly pricing: readonly ModelPrice[];
  readonly usage: UsageConfig;
  readonly learning: LearningConfig;
  readonly storage: StorageConfig;
  readonly mcpServers: readonly McpServerConfig[];
  readonly lazyToolGroups: readonly LazyToolGroupConfig[];
  /** Old tool name → canonical name. */
  readonly aliases: Readonly<Record<string, string>>;
  readonly server: ServerConfig;
  readonly auth: AuthConfig;
  readonly logging: LoggingConfig;
}
