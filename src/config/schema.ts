import { RE2JS } from "re2js";
import { z } from "zod";
import { PROVIDERS } from "../usage/model.ts";
import { ASYMMETRIC_JWT_ALGORITHMS } from "./auth-algorithms.ts";

/**
 * The YAML file as written (snake_case keys, docs/design.md §6). Every object is strict so a typo is an
 * error, and nothing here has a default: defaults live in defaults.ts and are applied by load.ts.
 */

const name = z.string().trim().min(1, { error: "must not be empty" });
const globs = z.array(name);
const loadingMode = z.enum(["always", "deferred"]);
const nonNegativeInt = z.number().int().min(0);
const positiveInt = z.number().int().min(1);
const price = z.number().min(0).max(1_000_000);
/** Connection timeouts: fractions allowed (tests use sub-second ones), at most a day. */
const timeoutSeconds = z.number().positive().max(86_400);
const stringMap = z.record(z.string(), z.string());

export const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);
export const port = z.number().int().min(0).max(65535);
export const host = name;
export const dataDir = name;
export const maxMessageBytes = z
  .number()
  .int()
  .min(1024)
  .max(1024 * 1024 * 1024);

const example = z.strictObject({
  args: z.record(z.string(), z.unknown()).optional(),
  description: z.string().optional(),
  tags: z.array(z.string()).optional(),
});

const sourceOptions = {
  loading_mode: loadingMode.optional(),
  always_loaded: globs.optional(),
  deferred: globs.optional(),
  examples: z.record(z.string(), z.array(example)).optional(),
  tags: z.array(name).optional(),
};

const catalog = z.strictObject({
  path: name,
  namespace: name.optional(),
  invalid_schemas: z.enum(["refuse", "warn"]).optional(),
  ...sourceOptions,
});

const toolSearch = z.strictObject({
  enabled: z.boolean().optional(),
  default_loading_mode: loadingMode.optional(),
  always_loaded_patterns: globs.optional(),
  activation_scope: z.enum(["run", "session"]).optional(),
  dispatch: z.boolean().optional(),
  preferred_namespaces: z.array(name).optional(),
  max_search_results: z.number().int().min(1).max(20).optional(),
  run_activation_ttl_seconds: positiveInt.optional(),
  good_match_score: z.number().min(0).max(1).optional(),
  // One word (as typed, no spaces) → 1–10 readings of 1–64 characters; at most 1,000 words.
  synonyms: z
    .record(z.string(), z.array(z.string().trim().min(1).max(64)).min(1).max(10))
    .superRefine((table, ctx) => {
      const words = Object.keys(table);
      if (words.length > 1_000)
        ctx.addIssue({ code: "custom", message: `has ${words.length} words; at most 1,000` });
      for (const word of words)
        if (!/^[^\s]{1,32}$/.test(word))
          ctx.addIssue({
            code: "custom",
            path: [word],
            message: "the word must be one word of 1–32 characters",
          });
    })
    .optional(),
  semantic: z
    .strictObject({
      enabled: z.boolean().optional(),
      model_dir: name.optional(),
      weight: z.number().min(0).max(1).optional(),
      threads: z.number().int().min(1).max(256).optional(),
      max_wait_ms: z.number().int().min(0).max(60_000).optional(),
    })
    .optional(),
});

const policy = z.strictObject({
  allowed: globs.optional(),
  denied: globs.optional(),
  require_tags: z.array(name).optional(),
});

const visibilityRule = z.strictObject({
  match: z.strictObject({ tenant: name.optional(), entitlements: z.array(name).optional() }),
  allow: globs.optional(),
  deny: globs.optional(),
});

const skillPack = z.strictObject({
  name,
  path: name,
  scope_mode: z.enum(["project", "tenant", "global"]).optional(),
  pinned_skill_names: z.array(name).optional(),
  update_existing_pack_skills: z.boolean().optional(),
});

/** Every price field of the pricing domain (src/usage/pricing.ts ModelPrice), in the YAML's names. */
const pricing = z.strictObject({
  provider: z.enum(PROVIDERS),
  model: name,
  input: price,
  output: price,
  cache_write: price.optional(),
  cache_write_1h: price.optional(),
  cache_read: price.optional(),
});

/** A secret named, never written in the config: an environment variable or a file holding it. */
const secret = z.custom<{ env: string } | { file: string }>(
  (value) => {
    if (typeof value !== "object" || value === null || Object.keys(value).length !== 1) return false;
    const ref = value as { env?: unknown; file?: unknown };
    const named = ref.env ?? ref.file;
    return typeof named === "string" && named.trim() !== "";
  },
  // A custom issue: its message is shown without the value, which may be a secret pasted by mistake.
  {
    error:
      "must be {env: VARIABLE} or {file: path}: secrets are read from the environment or a file, never written here",
  },
);

const tenantCredentials = z.strictObject({
  headers: z.record(name, secret).optional(),
  env: z.record(name, secret).optional(),
});

const mcpServer = z
  .strictObject({
    name,
    transport: z.enum(["stdio", "http"]),
    command: name.optional(),
    args: z.array(z.string()).optional(),
    env: stringMap.optional(),
    cwd: name.optional(),
    url: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
    headers: stringMap.optional(),
    sync_interval_seconds: nonNegativeInt.optional(),
    call_timeout_seconds: z.number().int().min(1).max(600).optional(),
    max_concurrent_calls: z.number().int().min(1).max(1_000).optional(),
    breaker: z
      .strictObject({
        failures: z.number().int().min(1).max(1_000).optional(),
        open_seconds: z.number().int().min(1).max(3_600).optional(),
      })
      .optional(),
    tenant_credentials: z.record(name, tenantCredentials).optional(),
    require_tenant_credentials: z.boolean().optional(),
    ...sourceOptions,
  })
  .superRefine((server, ctx) => {
    const misplaced = (key: string, owner: string) =>
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `only applies to transport ${owner}; remove it or set transport: ${owner}`,
      });
    for (const [tenant, credentials] of Object.entries(server.tenant_credentials ?? {})) {
      const wrong = server.transport === "stdio" ? "headers" : "env";
      if (credentials[wrong] !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["tenant_credentials", tenant, wrong],
          message: `does not apply to transport ${server.transport}; use ${wrong === "headers" ? "env" : "headers"}`,
        });
    }
    if (server.transport === "stdio") {
      if (server.command === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["command"],
          message: "is required for transport stdio; add the executable to run, e.g. command: npx",
        });
      if (server.url !== undefined) misplaced("url", "http");
      if (server.headers !== undefined) misplaced("headers", "http");
    } else {
      if (server.url === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["url"],
          message: 'is required for transport http; add the endpoint, e.g. url: "http://127.0.0.1:9000/mcp"',
        });
      for (const key of ["command", "args", "env", "cwd"] as const)
        if (server[key] !== undefined) misplaced(key, "stdio");
    }
  });

const re2 = z.string().superRefine((pattern, ctx) => {
  try {
    RE2JS.compile(pattern);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    ctx.addIssue({ code: "custom", message: `invalid regex (RE2 syntax): ${why}; fix the pattern` });
  }
});

const lazyToolGroup = z.strictObject({
  name,
  tools: globs.min(1, { error: "must list at least one tool name or glob" }),
  triggers: z.strictObject({ keywords: z.array(name).optional(), regexes: z.array(re2).optional() }),
});

const aliases = z.record(name, name).superRefine((map, ctx) => {
  for (const [alias, canonical] of Object.entries(map)) {
    if (alias === canonical)
      ctx.addIssue({ code: "custom", path: [alias], message: "aliases itself; remove this entry" });
    else if (canonical in map)
      ctx.addIssue({
        code: "custom",
        path: [alias],
        message: `points to \`${canonical}\`, which is itself an alias; point it at the canonical name`,
      });
  }
});

const role = z.enum(["agent", "observer", "admin"]);
/** What a credential grants, shared by API keys and mTLS principals. */
const grant = {
  tenant: z.string().trim().optional(),
  roles: z.array(role).min(1, { error: "list at least one role (agent, observer, admin)" }),
  entitlements: z.array(name).optional(),
  projects: z.array(name).optional(),
};
const apiKey = z
  .strictObject({
    id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, { error: "use 1-64 letters, digits, '.', '_' or '-'" }),
    key_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, { error: "must be the key's SHA-256 as 64 lower-case hex digits" }),
    expires_at: z.iso
      .datetime({ offset: true })
      // The latest time a Timestamp carries in JSON: a later expiry could not be listed (ListApiKeys).
      .refine((value) => Date.parse(value) < Date.UTC(10_000, 0, 1), {
        message: "must be before 10000-01-01T00:00:00Z",
      })
      .optional(),
    ...grant,
  })
  .superRefine((key, ctx) => grantNeedsTenant(key, ctx));
/** Only the operator (admin) may be bound to no tenant: anything else without one could see nothing. */
function grantNeedsTenant(grant: { tenant?: string | undefined; roles: string[] }, ctx: z.RefinementCtx) {
  if ((grant.tenant ?? "") === "" && !grant.roles.includes("admin"))
    ctx.addIssue({
      code: "custom",
      path: ["tenant"],
      message: "name the tenant this credential acts for (only an admin may have none: the operator)",
    });
}
const claimName = z.string().trim().min(1).max(256);
const jwksUrl = z.url({ protocol: /^https?$/ }).superRefine((url, ctx) => {
  const host = new URL(url).hostname;
  if (url.startsWith("http:") && !["localhost", "127.0.0.1", "[::1]"].includes(host))
    ctx.addIssue({ code: "custom", message: "must be https (plain http only for localhost)" });
});
const jwt = z
  .strictObject({
    jwks_url: jwksUrl.optional(),
    public_keys: z.array(z.union([z.string().trim().min(1), z.record(z.string(), z.unknown())])).optional(),
    issuer: name,
    audience: z.union([name, z.array(name).min(1)]),
    algorithms: z.array(z.enum(ASYMMETRIC_JWT_ALGORITHMS)).min(1).optional(),
    clock_skew_seconds: z.number().int().min(0).max(300).optional(),
    jwks_cooldown_seconds: z.number().min(0).max(3600).optional(),
    claims: z
      .strictObject({
        tenant: claimName.optional(),
        user: claimName.optional(),
        entitlements: claimName.optional(),
        roles: claimName.optional(),
        projects: claimName.optional(),
      })
      .optional(),
    default_roles: z.array(role).optional(),
  })
  .superRefine((value, ctx) => {
    if ((value.jwks_url === undefined) === (value.public_keys === undefined))
      ctx.addIssue({ code: "custom", message: "set exactly one of jwks_url and public_keys" });
  });
const mtls = z.strictObject({
  client_ca: name.optional(),
  principal_from: z.enum(["subject_cn", "san_uri"]).optional(),
  principals: z.record(
    z.string().trim().min(1),
    z.strictObject(grant).superRefine((value, ctx) => grantNeedsTenant(value, ctx)),
  ),
});
const auth = z.strictObject({
  api_keys: z.array(apiKey).optional(),
  jwt: jwt.optional(),
  mtls: mtls.optional(),
  allow_unauthenticated: z.boolean().optional(),
  key_retention_days: z.number().int().min(0).max(3650).optional(),
  limits: z
    .strictObject({
      calls_per_second: z.number().positive().max(1_000_000).optional(),
      burst: positiveInt.optional(),
      watch_streams: positiveInt.optional(),
    })
    .optional(),
});
const tls = z.strictObject({ cert_file: name, key_file: name, client_ca_file: name.optional() });

/** A libpq-style URL; the scheme check catches a MySQL or HTTP URL pasted by mistake. */
export const postgresUrl = z
  .string()
  .max(2048)
  .refine((value) => URL.canParse(value) && /^postgres(ql)?:$/.test(new URL(value).protocol), {
    message: "must be a PostgreSQL URL: postgres://user:password@host:5432/database",
  });

/** A web origin as browsers send it (`https://console.example.com:8443`), or "*" for any. */
const webOrigin = z
  .string()
  .max(512)
  .refine((value) => value === "*" || isWebOrigin(value), {
    message: 'must be "*" or an origin: scheme, host and port only, e.g. "https://console.example.com"',
  });

function isWebOrigin(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value;
}

/** A name clients reach the server by (`wayfind.example.com`), as a Host header carries it. */
const allowedHost = z
  .string()
  .max(253)
  .regex(/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/, {
    message: "must be a host name without port or scheme, e.g. wayfind.example.com",
  });

const server = z.strictObject({
  host: host.optional(),
  port: port.optional(),
  data_dir: dataDir.optional(),
  max_message_bytes: maxMessageBytes.optional(),
  handshake_timeout_seconds: timeoutSeconds.optional(),
  request_header_timeout_seconds: timeoutSeconds.optional(),
  request_body_timeout_seconds: timeoutSeconds.optional(),
  idle_timeout_seconds: timeoutSeconds.optional(),
  max_connections: z.number().int().min(1).max(1_000_000).optional(),
  metrics: z.boolean().optional(),
  mcp: z
    .strictObject({
      enabled: z.boolean().optional(),
      max_sessions: z.number().int().min(1).max(100_000).optional(),
      max_sessions_per_credential: z.number().int().min(1).max(100_000).optional(),
      max_sessions_per_tenant: z.number().int().min(1).max(100_000).optional(),
      session_idle_timeout_seconds: timeoutSeconds.optional(),
      tool_list: z.enum(["fixed", "activated"]).optional(),
    })
    .optional(),
  cors: z
    .strictObject({
      allowed_origins: z.array(webOrigin).max(100),
      max_age: z.number().int().min(0).max(86_400).optional(),
    })
    .optional(),
  console: z.boolean().optional(),
  allowed_hosts: z.array(allowedHost).max(100).optional(),
  tls: tls.optional(),
  event_retention: z
    .strictObject({ max_events: positiveInt.optional(), max_age_hours: z.number().positive().optional() })
    .optional(),
});

const uniqueNames = z.strictObject({
  catalogs: z.array(catalog).optional(),
  tool_search: toolSearch.optional(),
  policy: policy.optional(),
  visibility: z.array(visibilityRule).optional(),
  skill_packs: z.array(skillPack).optional(),
  skills: z
    .strictObject({
      redaction: z.boolean().optional(),
      good_match_score: z.number().min(0).max(1).optional(),
    })
    .optional(),
  pricing: z.array(pricing).optional(),
  usage: z.strictObject({ retention_days: z.number().int().min(1).max(36_500).optional() }).optional(),
  learning: z
    .strictObject({
      enabled: z.boolean().optional(),
      weight: z.number().min(0).max(1).optional(),
      half_life_days: z.number().min(0.01).max(36_500).optional(),
      selection_window_seconds: z.number().min(1).max(86_400).optional(),
      max_requests_per_tool: z.number().int().min(1).max(1_000).optional(),
      max_rows_per_tenant: z.number().int().min(1).max(1_000_000).optional(),
      max_requests_in_memory: z.number().int().min(1).max(10_000_000).optional(),
      lessons_per_second: z.number().min(0.01).max(100_000).optional(),
      operator_tenants: z.array(z.string().min(1).max(256)).max(100).optional(),
    })
    .optional(),
  storage: z
    .strictObject({
      postgres: z
        .strictObject({
          url: postgresUrl,
          pool_size: z.number().int().min(1).max(100).optional(),
          compaction: z
            .strictObject({
              every_changes: z.number().int().min(1).max(100_000_000).optional(),
              check_interval_seconds: z.number().min(0.05).max(86_400).optional(),
              replica_timeout_seconds: z
                .number()
                .min(0.5)
                .max(30 * 86_400)
                .optional(),
            })
            .optional(),
        })
        .optional(),
    })
    .optional(),
  mcp_servers: z.array(mcpServer).optional(),
  lazy_tool_groups: z.array(lazyToolGroup).optional(),
  aliases: aliases.optional(),
  server: server.optional(),
  auth: auth.optional(),
  logging: z.strictObject({ level: logLevel.optional() }).optional(),
});

/** Names that identify an entry (packs, MCP namespaces, groups) must be unique within their list. */
export const configFileSchema = uniqueNames.superRefine((file, ctx) => {
  for (const list of ["skill_packs", "mcp_servers", "lazy_tool_groups"] as const) {
    const seen = new Map<string, number>();
    (file[list] ?? []).forEach((entry, i) => {
      const first = seen.get(entry.name);
      if (first === undefined) seen.set(entry.name, i);
      else
        ctx.addIssue({
          code: "custom",
          path: [list, i, "name"],
          message: `duplicates ${list}[${first}].name; give each entry its own name`,
        });
    });
  }
});

export type ConfigFile = z.infer<typeof configFileSchema>;
