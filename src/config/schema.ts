import { RE2JS } from "re2js";
import { z } from "zod";
import { PROVIDERS } from "../usage/model.ts";

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
  ...sourceOptions,
});

const toolSearch = z.strictObject({
  enabled: z.boolean().optional(),
  default_loading_mode: loadingMode.optional(),
  always_loaded_patterns: globs.optional(),
  activation_scope: z.enum(["run", "session"]).optional(),
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
      model_dir: name,
      weight: z.number().min(0).max(1).optional(),
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
    ...sourceOptions,
  })
  .superRefine((server, ctx) => {
    const misplaced = (key: string, owner: string) =>
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `only applies to transport ${owner}; remove it or set transport: ${owner}`,
      });
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
  mcp_servers: z.array(mcpServer).optional(),
  lazy_tool_groups: z.array(lazyToolGroup).optional(),
  aliases: aliases.optional(),
  server: server.optional(),
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
