import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { type Document, isMap, isPair, isScalar, LineCounter, type Node, parseDocument } from "yaml";
import type { z } from "zod";
import type { PostgresConfig } from "../replication/replica.ts";
import { yamlValue } from "../text/yaml.ts";
import type { ModelPrice } from "../usage/pricing.ts";
import { authConfig, tlsConfig } from "./auth.ts";
import { credentialFiles } from "./credential-files.ts";
import { DEFAULTS } from "./defaults.ts";
import { ConfigError, didYouMean } from "./errors.ts";
import {
  type ConfigFile,
  configFileSchema,
  dataDir as dataDirSchema,
  host as hostSchema,
  logLevel as logLevelSchema,
  maxMessageBytes as maxMessageBytesSchema,
  port as portSchema,
  postgresUrl,
} from "./schema.ts";
import type {
  McpServerConfig,
  SecretRef,
  ToolExampleConfig,
  ToolSourceOptions,
  WayfindConfig,
} from "./types.ts";

type Env = Readonly<Record<string, string | undefined>>;
type Path = readonly PropertyKey[];

/** The configuration used when no file is given: every default, data dir under the working directory. */
export function defaultConfig(): WayfindConfig {
  return toConfig({}, process.cwd(), undefined);
}

/**
 * Reads and validates a YAML config file (docs/design.md §6), then applies environment overrides
 * (WAYFIND_HOST, WAYFIND_PORT, WAYFIND_DATA_DIR, WAYFIND_LOG_LEVEL, WAYFIND_MAX_MESSAGE_BYTES,
 * WAYFIND_DATABASE_URL).
 * Precedence: environment > file > defaults; CLI flags are applied on top by the caller.
 * Throws one ConfigError listing every problem.
 */
export function loadConfig(file?: string, env: Env = process.env): WayfindConfig {
  const problems: string[] = [];
  let config = defaultConfig();
  if (file !== undefined) {
    const absolute = resolve(expandHome(file));
    let text: string;
    try {
      text = readFileSync(absolute, "utf8");
    } catch (err) {
      const why = err instanceof Error && "code" in err && err.code === "ENOENT" ? "not found" : String(err);
      throw new ConfigError([`${file}: cannot read the config file (${why}); check the --config path`]);
    }
    const parsed = parseConfigText(text, file);
    if (parsed.problems.length > 0) problems.push(...parsed.problems);
    else if (parsed.value) config = toConfig(parsed.value, dirname(absolute), absolute);
  }
  const overridden = applyEnv(config, env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return overridden;
}

/**
 * The catalog files and skill pack folders the config names that do not exist, each as a problem
 * with the config file, line and key (serve checks this before it creates or loads anything; the
 * config alone stays loadable without them, e.g. for `catalog stats` on another machine's config).
 */

export function missingSourceFiles(config: WayfindConfig): string[] {
  const missing = [
    ...config.catalogs.map((c, i) => ({
      path: ["catalogs", i, "path"],
      resolved: c.path,
      what: "catalog file",
    })),
    ...config.skillPacks.map((p, i) => ({
      path: ["skill_packs", i, "path"],
      resolved: p.path,
      what: "skill pack",
    })),
    ...credentialFiles(config),
  ].filter((entry) => !existsSync(entry.resolved));
  if (missing.length === 0) return [];
  const file = config.configFile ?? "config";
  let locateIn: ((path: Path) => { line: number; col: number } | undefined) | undefined;
  if (config.configFile) {
    const lineCounter = new LineCounter();
    const doc = parseDocument(readFileSync(config.configFile, "utf8"), { lineCounter });
    locateIn = (path) => locate(doc, lineCounter, path);
  }
  return missing.map(({ path, resolved, what }) => {
    const pos = locateIn?.(path);
    const at = pos ? `${file}:${pos.line}:${pos.col}` : file;
    return `${at}: ${formatPath(path)}: no ${what} at ${resolved}; fix the path (relative paths start at the config file's folder)`;
  });
}

/** Parses and validates config text; `file` only labels the problems. Exported for tests and `wayfind check`. */
function parseConfigText(text: string, file: string): { value: ConfigFile | undefined; problems: string[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => {
      const pos = lineCounter.linePos(e.pos[0]);
      return `${file}:${pos.line}:${pos.col}: YAML syntax error: ${e.message.split("\n")[0]}; fix the YAML at that line`;
    });
    return { value: undefined, problems };
  }
  const converted = doc.contents === null ? { value: {} } : yamlValue(doc);
  if ("problem" in converted) return { value: undefined, problems: [`${file}: ${converted.problem}`] };
  const raw = converted.value;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return {
      value: undefined,
      problems: [
        `${file}:1:1: (top level): must be a mapping of keys such as \`catalogs:\`; see wayfind.example.yaml`,
      ],
    };
  }
  const result = configFileSchema.safeParse(raw);
  if (result.success) return { value: result.data, problems: [] };
  const located: { line: number; col: number; text: string }[] = [];
  const add = (path: Path, key: string | undefined, text: string) => {
    const pos = locate(doc, lineCounter, path, key) ?? { line: 0, col: 0 };
    const at = pos.line > 0 ? `${file}:${pos.line}:${pos.col}` : file;
    located.push({ ...pos, text: `${at}: ${text}` });
  };
  for (const issue of result.error.issues) {
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(configFileSchema, issue.path);
      for (const key of issue.keys) {
        const suggestion = didYouMean(key, known);
        const fix = suggestion
          ? `did you mean \`${suggestion}\`?`
          : `remove it; valid keys here: ${known.join(", ")}`;
        add(issue.path, key, `${formatPath([...issue.path, key])}: unknown key; ${fix}`);
      }
    } else {
      const value = valueAt(raw, issue.path);
      add(issue.path, undefined, `${formatPath(issue.path)}: ${describeIssue(issue, value)}`);
    }
  }
  // In file order, so the list reads top to bottom like the file.
  located.sort((a, b) => a.line - b.line || a.col - b.col);
  return { value: undefined, problems: located.map((p) => p.text) };
}

function describeIssue(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case "invalid_type": {
      if (value === undefined) return `is required; add it (${typeHint(issue.expected)})`;
      if (issue.expected === "int") return `must be a whole number, got ${show(value)}; drop the fraction`;
      return `must be ${typeHint(issue.expected)}, got ${kindOf(value)} ${show(value)}; change the value`;
    }
    case "invalid_value": {
      const allowed = issue.values.map(String);
      const suggestion = typeof value === "string" ? didYouMean(value, allowed) : undefined;
      const fix = suggestion ? `did you mean \`${suggestion}\`?` : `use one of: ${allowed.join(", ")}`;
      return `must be one of ${allowed.join(" | ")}, got ${show(value)}; ${fix}`;
    }
    case "too_small":
      if (issue.origin === "string") return "must not be empty; give it a value or remove the key";
      if (issue.origin === "array")
        return `must list at least ${issue.minimum} item${issue.minimum === 1 ? "" : "s"}; add one`;
      return `must be ${issue.inclusive ? "at least" : "more than"} ${issue.minimum}, got ${show(value)}; raise it`;
    case "too_big":
      if (issue.origin === "array") return `must list at most ${issue.maximum} items; remove some`;
      return `must be ${issue.inclusive ? "at most" : "less than"} ${issue.maximum}, got ${show(value)}; lower it`;
    case "custom":
      return issue.message;
    default:
      return `${issue.message}, got ${show(value)}; fix the value`;
  }
}

function typeHint(expected: string): string {
  switch (expected) {
    case "string":
      return "a string";
    case "number":
    case "int":
      return "a number";
    case "boolean":
      return "true or false";
    case "array":
      return "a list, e.g. [a, b]";
    case "object":
    case "record":
      return "a mapping of key: value";
    default:
      return expected;
  }
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return `a ${typeof value}`;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** `catalogs[0].examples["github.create"]`, the way an operator would point at the key. */
function formatPath(path: Path): string {
  if (path.length === 0) return "(top level)";
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(String(part))) out += out === "" ? String(part) : `.${String(part)}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  let cur = root;
  for (const part of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[part];
  }
  return cur;
}

/** Line and column of the node at `path` (or of `key` inside it), else of the nearest ancestor present. */
function locate(
  doc: Document,
  lines: LineCounter,
  path: Path,
  key?: string,
): { line: number; col: number } | undefined {
  const keys = path.filter((p): p is string | number => typeof p !== "symbol");
  for (let n = keys.length; n >= 0; n--) {
    const node = (n === 0 ? doc.contents : doc.getIn(keys.slice(0, n), true)) as Node | null | undefined;
    if (!node) continue;
    let offset = node.range?.[0];
    if (key !== undefined && n === keys.length && isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
      if (pair && isScalar(pair.key)) offset = pair.key.range?.[0] ?? offset;
    }
    if (offset !== undefined) return lines.linePos(offset);
  }
  return undefined;
}

interface WalkDef {
  type: string;
  shape?: Record<string, z.core.$ZodType>;
  innerType?: z.core.$ZodType;
  element?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  in?: z.core.$ZodType;
}

/** Keys an object schema accepts at `path` (walks arrays, records and optional wrappers). */
function knownKeysAt(schema: z.core.$ZodType, path: Path): string[] {
  let def = schema._zod.def as unknown as WalkDef;
  const unwrap = () => {
    for (;;) {
      const inner = def.innerType ?? (def.type === "pipe" ? def.in : undefined);
      if (!inner) return;
      def = inner._zod.def as unknown as WalkDef;
    }
  };
  unwrap();
  for (const part of path) {
    const next =
      def.type === "array" ? def.element : def.type === "record" ? def.valueType : def.shape?.[String(part)];
    if (!next) return [];
    def = next._zod.def as unknown as WalkDef;
    unwrap();
  }
  return Object.keys(def.shape ?? {});
}

function expandHome(p: string): string {
  return p === "~" || p.startsWith("~/") ? homedir() + p.slice(1) : p;
}

function resolvePath(base: string, p: string): string {
  return resolve(base, expandHome(p));
}

/** Raw snake_case file → camelCase config with defaults applied and paths made absolute. */
function toConfig(raw: ConfigFile, baseDir: string, configFile: string | undefined): WayfindConfig {
  const ts = raw.tool_search ?? {};
  const defaultLoadingMode = ts.default_loading_mode ?? DEFAULTS.toolSearch.defaultLoadingMode;
  // Secret files resolve like every path; the secrets themselves are read when a session opens.
  const secrets = (refs: Record<string, { env: string } | { file: string }> | undefined) =>
    Object.fromEntries(
      Object.entries(refs ?? {}).map(([key, ref]): [string, SecretRef] => [
        key,
        "file" in ref ? { file: resolvePath(baseDir, ref.file) } : ref,
      ]),
    );
  const source = (s: {
    loading_mode?: "always" | "deferred" | undefined;
    always_loaded?: string[] | undefined;
    deferred?: string[] | undefined;
    examples?: Record<string, { args?: Record<string, unknown>; description?: string; tags?: string[] }[]>;
    tags?: string[] | undefined;
  }): ToolSourceOptions => ({
    loadingMode: s.loading_mode ?? defaultLoadingMode,
    alwaysLoaded: s.always_loaded ?? DEFAULTS.catalog.alwaysLoaded,
    deferred: s.deferred ?? DEFAULTS.catalog.deferred,
    examples: Object.fromEntries(
      Object.entries(s.examples ?? {}).map(([tool, list]) => [
        tool,
        list.map(
          (e): ToolExampleConfig => ({
            args: e.args ?? {},
            description: e.description ?? "",
            tags: e.tags ?? [],
          }),
        ),
      ]),
    ),
    tags: s.tags ?? DEFAULTS.catalog.tags,
  });
  const server = raw.server ?? {};
  return {
    configFile,
    catalogs: (raw.catalogs ?? []).map((c) => ({
      path: resolvePath(baseDir, c.path),
      namespace: c.namespace,
      invalidSchemas: c.invalid_schemas ?? "refuse",
      ...source(c),
    })),
    toolSearch: {
      enabled: ts.enabled ?? DEFAULTS.toolSearch.enabled,
      defaultLoadingMode,
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
            : resolvePath(baseDir, ts.semantic.model_dir),
        weight: ts.semantic?.weight ?? DEFAULTS.toolSearch.semantic.weight,
        threads: ts.semantic?.threads ?? DEFAULTS.toolSearch.semantic.threads,
        maxWaitMs: ts.semantic?.max_wait_ms ?? DEFAULTS.toolSearch.semantic.maxWaitMs,
      },
    },
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
      path: resolvePath(baseDir, p.path),
      scopeMode: p.scope_mode ?? DEFAULTS.skillPack.scopeMode,
      pinnedSkillNames: p.pinned_skill_names ?? DEFAULTS.skillPack.pinnedSkillNames,
      updateExistingPackSkills: p.update_existing_pack_skills ?? DEFAULTS.skillPack.updateExistingPackSkills,
    })),
    skills: {
      redaction: raw.skills?.redaction ?? DEFAULTS.skills.redaction,
      goodMatchScore: raw.skills?.good_match_score ?? DEFAULTS.skills.goodMatchScore,
    },
    pricing: (raw.pricing ?? DEFAULTS.pricing).map(
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
    ),
    usage: { retentionDays: raw.usage?.retention_days ?? DEFAULTS.usage.retentionDays },
    learning: {
      enabled: raw.learning?.enabled ?? DEFAULTS.learning.enabled,
      weight: raw.learning?.weight ?? DEFAULTS.learning.weight,
      halfLifeDays: raw.learning?.half_life_days ?? DEFAULTS.learning.halfLifeDays,
      selectionWindowSeconds:
        raw.learning?.selection_window_seconds ?? DEFAULTS.learning.selectionWindowSeconds,
      maxRequestsPerTool: raw.learning?.max_requests_per_tool ?? DEFAULTS.learning.maxRequestsPerTool,
      maxRowsPerTenant: raw.learning?.max_rows_per_tenant ?? DEFAULTS.learning.maxRowsPerTenant,
      maxRequestsInMemory: raw.learning?.max_requests_in_memory ?? DEFAULTS.learning.maxRequestsInMemory,
      lessonsPerSecond: raw.learning?.lessons_per_second ?? DEFAULTS.learning.lessonsPerSecond,
      operatorTenants: raw.learning?.operator_tenants ?? DEFAULTS.learning.operatorTenants,
    },
    storage: {
      postgres: raw.storage?.postgres && postgresConfig(raw.storage.postgres.url, raw.storage.postgres),
    },
    mcpServers: (raw.mcp_servers ?? []).map((m): McpServerConfig => {
      const common = {
        name: m.name,
        syncIntervalSeconds: m.sync_interval_seconds ?? DEFAULTS.mcpServer.syncIntervalSeconds,
        callTimeoutSeconds: m.call_timeout_seconds ?? DEFAULTS.mcpServer.callTimeoutSeconds,
        maxConcurrentCalls: m.max_concurrent_calls ?? DEFAULTS.mcpServer.maxConcurrentCalls,
        breakerFailures: m.breaker?.failures ?? DEFAULTS.mcpServer.breakerFailures,
        breakerOpenSeconds: m.breaker?.open_seconds ?? DEFAULTS.mcpServer.breakerOpenSeconds,
        tenantCredentials: Object.fromEntries(
          Object.entries(m.tenant_credentials ?? {}).map(([tenant, c]) => [
            tenant,
            { headers: secrets(c.headers), env: secrets(c.env) },
          ]),
        ),
        requireTenantCredentials: m.require_tenant_credentials ?? DEFAULTS.mcpServer.requireTenantCredentials,
        ...source(m),
      };
      // The schema guarantees command for stdio and url for http.
      return m.transport === "stdio"
        ? {
            ...common,
            transport: "stdio",
            command: m.command ?? "",
            args: m.args ?? [],
            env: m.env ?? {},
            cwd: m.cwd === undefined ? undefined : resolvePath(baseDir, m.cwd),
          }
        : { ...common, transport: "http", url: m.url ?? "", headers: m.headers ?? {} };
    }),
    lazyToolGroups: (raw.lazy_tool_groups ?? []).map((g) => ({
      name: g.name,
      tools: g.tools,
      triggers: { keywords: g.triggers.keywords ?? [], regexes: g.triggers.regexes ?? [] },
    })),
    aliases: raw.aliases ?? {},
    server: {
      host: server.host ?? DEFAULTS.server.host,
      port: server.port ?? DEFAULTS.server.port,
      dataDir: resolvePath(baseDir, server.data_dir ?? DEFAULTS.server.dataDir),
      maxMessageBytes: server.max_message_bytes ?? DEFAULTS.server.maxMessageBytes,
      handshakeTimeoutSeconds: server.handshake_timeout_seconds ?? DEFAULTS.server.handshakeTimeoutSeconds,
      requestHeaderTimeoutSeconds:
        server.request_header_timeout_seconds ?? DEFAULTS.server.requestHeaderTimeoutSeconds,
      requestBodyTimeoutSeconds:
        server.request_body_timeout_seconds ?? DEFAULTS.server.requestBodyTimeoutSeconds,
      idleTimeoutSeconds: server.idle_timeout_seconds ?? DEFAULTS.server.idleTimeoutSeconds,
      maxConnections: server.max_connections ?? DEFAULTS.server.maxConnections,
      metrics: server.metrics ?? DEFAULTS.server.metrics,
      mcp: {
        enabled: server.mcp?.enabled ?? DEFAULTS.server.mcp.enabled,
        maxSessions: server.mcp?.max_sessions ?? DEFAULTS.server.mcp.maxSessions,
        maxSessionsPerCredential:
          server.mcp?.max_sessions_per_credential ?? DEFAULTS.server.mcp.maxSessionsPerCredential,
        maxSessionsPerTenant: server.mcp?.max_sessions_per_tenant ?? DEFAULTS.server.mcp.maxSessionsPerTenant,
        sessionIdleTimeoutSeconds:
          server.mcp?.session_idle_timeout_seconds ?? DEFAULTS.server.mcp.sessionIdleTimeoutSeconds,
        toolList: server.mcp?.tool_list ?? DEFAULTS.server.mcp.toolList,
      },
      cors: {
        allowedOrigins: server.cors?.allowed_origins ?? DEFAULTS.server.cors.allowedOrigins,
        maxAgeSeconds: server.cors?.max_age ?? DEFAULTS.server.cors.maxAgeSeconds,
      },
      console: server.console ?? DEFAULTS.server.console,
      allowedHosts: (server.allowed_hosts ?? DEFAULTS.server.allowedHosts).map((name) => name.toLowerCase()),
      tls: tlsConfig(server.tls, (p) => resolvePath(baseDir, p)),
      eventRetention: {
        maxEvents: server.event_retention?.max_events ?? DEFAULTS.server.eventRetention.maxEvents,
        maxAgeHours: server.event_retention?.max_age_hours ?? DEFAULTS.server.eventRetention.maxAgeHours,
      },
    },
    auth: authConfig(raw.auth, (p) => resolvePath(baseDir, p)),
    logging: { level: raw.logging?.level ?? DEFAULTS.logging.level },
  };
}

/** Values that the environment or the command line may override; strings are parsed as the YAML value would be. */
export interface ConfigOverrides {
  readonly host?: string | undefined;
  readonly port?: string | number | undefined;
  readonly dataDir?: string | undefined;
  readonly logLevel?: string | undefined;
  readonly maxMessageBytes?: string | number | undefined;
}

const ENV_NAMES = {
  host: "WAYFIND_HOST",
  port: "WAYFIND_PORT",
  dataDir: "WAYFIND_DATA_DIR",
  logLevel: "WAYFIND_LOG_LEVEL",
  maxMessageBytes: "WAYFIND_MAX_MESSAGE_BYTES",
} as const;

const FLAG_NAMES = {
  host: "--host",
  port: "--port",
  dataDir: "--data-dir",
  logLevel: "--log-level",
  maxMessageBytes: "--max-message-bytes",
} as const;

/**
 * Applies `wayfind serve` flags on top of a loaded config (flags win over environment and file),
 * validated like the YAML keys; a relative --data-dir resolves against the working directory.
 * Throws a ConfigError naming the flag.
 */
export function applyCliOverrides(config: WayfindConfig, flags: ConfigOverrides): WayfindConfig {
  const problems: string[] = [];
  const result = applyOverrides(config, flags, "command line", FLAG_NAMES, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return result;
}

function applyEnv(config: WayfindConfig, env: Env, problems: string[]): WayfindConfig {
  const values = Object.fromEntries(
    Object.entries(ENV_NAMES).map(([key, variable]) => [key, env[variable]]),
  ) as ConfigOverrides;
  return applyDatabaseUrl(applyOverrides(config, values, "environment", ENV_NAMES, problems), env, problems);
}

/** WAYFIND_DATABASE_URL puts the state on PostgreSQL (pool size from the file or the default). */
function applyDatabaseUrl(config: WayfindConfig, env: Env, problems: string[]): WayfindConfig {
  const url = env.WAYFIND_DATABASE_URL?.trim();
  if (!url) return config;
  const parsed = postgresUrl.safeParse(url);
  if (!parsed.success) {
    problems.push(
      "environment: WAYFIND_DATABASE_URL: must be a PostgreSQL URL (postgres://user:password@host:5432/database); " +
        "fix it or unset WAYFIND_DATABASE_URL to keep the state in SQLite",
    );
    return config;
  }
  const postgres = config.storage.postgres ?? postgresConfig(parsed.data, {});
  return { ...config, storage: { postgres: { ...postgres, url: parsed.data } } };
}

/** storage.postgres with its defaults. */
type PostgresFile = Omit<NonNullable<NonNullable<ConfigFile["storage"]>["postgres"]>, "url">;

function postgresConfig(url: string, raw: PostgresFile): PostgresConfig {
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

/** Each override is validated by the same schema as its YAML key; problems name the variable or flag. */
function applyOverrides(
  config: WayfindConfig,
  values: ConfigOverrides,
  origin: "environment" | "command line",
  names: Readonly<Record<keyof ConfigOverrides, string>>,
  problems: string[],
): WayfindConfig {
  const read = <T>(
    key: keyof ConfigOverrides,
    schema: z.ZodType<T>,
    numeric: boolean,
    fix: string,
  ): T | undefined => {
    const value = values[key];
    const name = names[key];
    // An empty value counts as unset, as shells make `FOO= cmd` easy to write by accident.
    if (value === undefined || String(value).trim() === "") return undefined;
    const text = String(value).trim();
    const candidate: unknown = numeric ? (/^\d+$/.test(text) ? Number(text) : Number.NaN) : text;
    const result = schema.safeParse(candidate);
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    const what =
      Number.isNaN(candidate) || !issue
        ? `must be a whole number, got ${JSON.stringify(String(value))}`
        : describeIssue(issue, candidate).split("; ")[0];
    const unset = origin === "environment" ? ` or unset ${name}` : "";
    problems.push(`${origin}: ${name}: ${what}; ${fix}${unset}`);
    return undefined;
  };
  const host = read("host", hostSchema, false, "set a host name or IP");
  const port = read("port", portSchema, true, "set a whole number from 0 to 65535");
  const dataDir = read("dataDir", dataDirSchema, false, "set a directory path");
  const level = read("logLevel", logLevelSchema, false, `set one of ${logLevelSchema.options.join(", ")}`);
  const maxMessageBytes = read(
    "maxMessageBytes",
    maxMessageBytesSchema,
    true,
    "set a whole number of bytes from 1024 to 1073741824",
  );
  return {
    ...config,
    server: {
      ...config.server,
      host: host ?? config.server.host,
      port: port ?? config.server.port,
      // Relative to the working directory: environment and flags belong to the process, not the file.
      dataDir: dataDir === undefined ? config.server.dataDir : resolvePath(process.cwd(), dataDir),
      maxMessageBytes: maxMessageBytes ?? config.server.maxMessageBytes,
    },
    logging: { level: level ?? config.logging.level },
  };
}

function millisecondsOf(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : Math.round(seconds * 1000);
}
