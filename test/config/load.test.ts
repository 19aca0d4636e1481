import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  applyCliOverrides,
  ConfigError,
  DEFAULTS,
  defaultConfig,
  loadConfig,
  missingSourceFiles,
} from "../../src/config/index.ts";
import { yamlAliasBomb } from "../support/yaml-bomb.ts";

const EXAMPLE = resolve(import.meta.dirname, "../../wayfind.example.yaml");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-config-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function write(text: string, name = "wayfind.yaml"): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** The problems of a config that must fail, as a list. */
function problemsOf(file: string, env: Record<string, string> = {}): readonly string[] {
  try {
    loadConfig(file, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as ConfigError;
    expect(e.code).toBe("invalid_argument");
    for (const p of e.problems) expect(e.message).toContain(p);
    return e.problems;
  }
  throw new Error("expected the config to be rejected");
}

describe("loadConfig", () => {
  it("loads wayfind.example.yaml, which documents every key", () => {
    const config = loadConfig(EXAMPLE, {});
    expect(config.configFile).toBe(EXAMPLE);
    expect(config.catalogs[0]?.namespace).toBe("github");
    expect(config.mcpServers.map((m) => m.transport)).toEqual(["stdio", "http"]);
    expect(config.toolSearch).toEqual({ ...DEFAULTS.toolSearch, preferredNamespaces: ["github"] });
    // The example states the defaults; keep it honest.
    expect(config.server).toEqual({
      ...defaultConfig().server,
      dataDir: resolve(import.meta.dirname, "../../.wayfind"),
    });
    expect(config.logging).toEqual(DEFAULTS.logging);
    expect(config.usage).toEqual(DEFAULTS.usage);
    expect(config.learning).toEqual(DEFAULTS.learning);
    expect(config.skills).toEqual(DEFAULTS.skills);
    expect(config.policy).toEqual(DEFAULTS.policy);
  });

  it("names in wayfind.example.yaml only files that exist, so it serves as its header says", () => {
    expect(missingSourceFiles(loadConfig(EXAMPLE, {}))).toEqual([]);
  });

  it("refuses a model folder that is not there by file, line and key", () => {
    const file = write("tool_search:\n  semantic:\n    model_dir: no-model-here\n");
    expect(missingSourceFiles(loadConfig(file, {}))).toEqual([
      `${file}:3:16: tool_search.semantic.model_dir: no model folder at ${join(dir, "no-model-here")}; fix the path (relative paths start at the config file's folder)`,
    ]);
  });

  it("applies every default when the file is empty, with camelCase keys", () => {
    const config = loadConfig(write(""), {});
    expect(config.toolSearch).toEqual(DEFAULTS.toolSearch);
    expect(config.server).toEqual({ ...DEFAULTS.server, dataDir: join(dir, ".wayfind") });
    expect(config.catalogs).toEqual([]);
  });

  it("defaultConfig() runs with no file: data dir under the working directory", () => {
    expect(defaultConfig().server.dataDir).toBe(resolve(".wayfind"));
    expect(defaultConfig().configFile).toBeUndefined();
  });

  it("rejects an unknown key and suggests the one meant, with its line", () => {
    const file = write("server:\n  port: 1\ncatalgos:\n  - path: a.jsonl\n");
    expect(problemsOf(file)).toEqual([`${file}:3:1: catalgos: unknown key; did you mean \`catalogs\`?`]);
  });

  it("suggests nested keys too, and lists valid keys when nothing is close", () => {
    const file = write("tool_search:\n  max_serach_results: 5\n  zzz: 1\n");
    const problems = problemsOf(file);
    expect(problems[0]).toContain(
      "tool_search.max_serach_results: unknown key; did you mean `max_search_results`?",
    );
    expect(problems[1]).toMatch(/tool_search\.zzz: unknown key; remove it; valid keys here: enabled, /);
  });

  it("reports every wrong type at once, each with file, line, key path, what and how to fix", () => {
    const file = write(
      [
        "tool_search:",
        "  activation_scope: sesion",
        '  max_search_results: "ten"',
        "policy: {allowed: '*'}",
        "server: {port: 99999}",
      ].join("\n"),
    );
    expect(problemsOf(file)).toEqual([
      `${file}:2:21: tool_search.activation_scope: must be one of run | session, got "sesion"; did you mean \`session\`?`,
      `${file}:3:23: tool_search.max_search_results: must be a number, got a string "ten"; change the value`,
      `${file}:4:19: policy.allowed: must be a list, e.g. [a, b], got a string "*"; change the value`,
      `${file}:5:16: server.port: must be at most 65535, got 99999; lower it`,
    ]);
  });

  it("takes CORS origins only as a page's origin, without a path", () => {
    const file = write(
      ["server:", "  cors: {allowed_origins: ['https://console.example.com/app']}"].join("\n"),
    );
    expect(problemsOf(file)).toEqual([
      `${file}:2:28: server.cors.allowed_origins[0]: must be "*" or an origin: scheme, host and port only, e.g. "https://console.example.com"`,
    ]);
  });

  it("requires command for a stdio MCP server and url for an http one", () => {
    const file = write(
      ["mcp_servers:", "  - {name: gh, transport: stdio}", "  - {name: docs, transport: http}"].join("\n"),
    );
    const problems = problemsOf(file);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/:2:5: mcp_servers\[0\]\.command: is required for transport stdio; add /);
    expect(problems[1]).toMatch(/:3:5: mcp_servers\[1\]\.url: is required for transport http; add /);
  });

  it("takes tenant credentials only by reference, and only of the kind the transport sends", () => {
    const server = "  - {name: gh, transport: http, url: 'http://127.0.0.1:9/mcp', tenant_credentials:";
    const [written] = problemsOf(
      write(
        ["mcp_servers:", `${server} {acme: {headers: {authorization: 'Bearer written-here'}}}}`].join("\n"),
      ),
    );
    expect(written).toContain(
      "tenant_credentials.acme.headers.authorization: must be {env: VARIABLE} or {file: path}",
    );
    expect(written).not.toContain("written-here");
    const [misplaced] = problemsOf(
      write(["mcp_servers:", `${server} {bravo: {env: {T: {env: X}}}}}`].join("\n")),
    );
    expect(misplaced).toContain(
      "mcp_servers[0].tenant_credentials.bravo.env: does not apply to transport http",
    );
  });

  it("reads usage.retention_days and rejects a retention under one day, with its line", () => {
    expect(loadConfig(write("usage:\n  retention_days: 7\n"), {}).usage).toEqual({ retentionDays: 7 });
    const file = write("usage:\n  retention_days: 0\n");
    expect(problemsOf(file)).toEqual([expect.stringMatching(/:2:\d+: usage\.retention_days: .*1/)]);
  });

  it("reads tool_search.synonyms and rejects a word with spaces or an empty reading list", () => {
    const ok = loadConfig(write("tool_search:\n  synonyms: {tix: [tickets, issues]}\n"), {});
    expect(ok.toolSearch.synonyms).toEqual({ tix: ["tickets", "issues"] });
    const problems = problemsOf(write("tool_search:\n  synonyms: {'two words': [x], tix: []}\n"));
    expect(problems).toEqual([
      expect.stringMatching(/tool_search\.synonyms.*one word of 1–32 characters/),
      expect.stringMatching(/tool_search\.synonyms\.tix/),
    ]);
  });

  it("rejects a lazy tool group trigger regex that RE2 cannot compile", () => {
    const file = write('lazy_tool_groups: [{name: k8s, tools: ["k8s.*"], triggers: {regexes: ["a("]}}]\n');
    expect(problemsOf(file)[0]).toContain(
      "lazy_tool_groups[0].triggers.regexes[0]: invalid regex (RE2 syntax): error parsing regexp: missing closing )",
    );
  });

  it("resolves relative paths against the config file's folder, not the working directory", () => {
    mkdirSync(join(dir, "conf"));
    const file = write(
      [
        "catalogs: [{path: tools/github.jsonl}]",
        "skill_packs: [{name: core, path: ../skills}]",
        "mcp_servers: [{name: gh, transport: stdio, command: npx, cwd: work}]",
        "server: {data_dir: state}",
      ].join("\n"),
      "conf/wayfind.yaml",
    );
    const config = loadConfig(file, {});
    expect(config.catalogs[0]?.path).toBe(join(dir, "conf/tools/github.jsonl"));
    expect(config.skillPacks[0]?.path).toBe(join(dir, "skills"));
    expect(config.mcpServers[0]?.transport === "stdio" && config.mcpServers[0].cwd).toBe(
      join(dir, "conf/work"),
    );
    expect(config.server.dataDir).toBe(join(dir, "conf/state"));
  });

  it("fills per-source defaults: loading mode from tool_search, cache prices from the input price", () => {
    const file = write(
      [
        "tool_search: {default_loading_mode: always}",
        "catalogs: [{path: a.jsonl}, {path: b.jsonl, loading_mode: deferred}]",
        "pricing: [{provider: openai, model: gpt-x, input: 2, output: 8}]",
      ].join("\n"),
    );
    const config = loadConfig(file, {});
    expect(config.catalogs.map((c) => c.loadingMode)).toEqual(["always", "deferred"]);
    expect(config.pricing[0]).toEqual({
      provider: "openai",
      model: "gpt-x",
      input: 2,
      output: 8,
      cacheWrite: 2,
      cacheRead: 2,
    });
  });

  it("reads every price field into the pricing domain's type, leaving an unset 1-hour write unknown", () => {
    const file = write(
      [
        "pricing:",
        "  - {provider: anthropic, model: a, input: 1, output: 2, cache_write: 3, cache_write_1h: 4, cache_read: 5}",
        "  - {provider: anthropic, model: b, input: 1, output: 2}",
      ].join("\n"),
    );
    expect(loadConfig(file, {}).pricing).toEqual([
      {
        provider: "anthropic",
        model: "a",
        input: 1,
        output: 2,
        cacheWrite: 3,
        cacheWrite1h: 4,
        cacheRead: 5,
      },
      { provider: "anthropic", model: "b", input: 1, output: 2, cacheWrite: 1, cacheRead: 1 },
    ]);
  });

  it("rejects negative, infinite or missing prices and unknown providers with the key to fix", () => {
    const file = write(
      [
        "pricing:",
        "  - {provider: anthropic, model: m, input: -1, output: 1}",
        "  - {provider: openai, model: m, input: 1, output: .inf}",
        "  - {provider: openai, model: m, output: 1}",
        "  - {provider: azure, model: m, input: 1, output: 1}",
        "  - {provider: openai, model: m, input: 1, output: 1, cache_write_1h: -2}",
      ].join("\n"),
    );
    const problems = problemsOf(file);
    expect(problems).toHaveLength(5);
    expect(problems[0]).toMatch(/:2:\d+: pricing\[0\]\.input: /);
    expect(problems[1]).toMatch(/:3:\d+: pricing\[1\]\.output: /);
    expect(problems[2]).toMatch(/:4:\d+: pricing\[2\]\.input: /);
    expect(problems[3]).toMatch(
      /:5:\d+: pricing\[3\]\.provider: .*anthropic.*openai.*gemini.*bedrock.*other/,
    );
    expect(problems[4]).toMatch(/:6:\d+: pricing\[4\]\.cache_write_1h: /);
  });

  it("lets WAYFIND_* environment variables override the file", () => {
    const file = write("server: {host: 0.0.0.0, port: 7000}\nlogging: {level: warn}\n");
    const config = loadConfig(file, {
      WAYFIND_PORT: "0",
      WAYFIND_LOG_LEVEL: "debug",
      WAYFIND_DATA_DIR: "/var/lib/wayfind",
      WAYFIND_MAX_MESSAGE_BYTES: "1048576",
    });
    expect(config.server).toMatchObject({
      host: "0.0.0.0",
      port: 0,
      dataDir: "/var/lib/wayfind",
      maxMessageBytes: 1048576,
    });
    expect(config.logging.level).toBe("debug");
  });

  it("rejects an invalid environment override, naming the variable", () => {
    const file = write("");
    expect(problemsOf(file, { WAYFIND_PORT: "80a", WAYFIND_LOG_LEVEL: "verbose" })).toEqual([
      'environment: WAYFIND_PORT: must be a whole number, got "80a"; set a whole number from 0 to 65535 or unset WAYFIND_PORT',
      'environment: WAYFIND_LOG_LEVEL: must be one of fatal | error | warn | info | debug | trace | silent, got "verbose"; set one of fatal, error, warn, info, debug, trace, silent or unset WAYFIND_LOG_LEVEL',
    ]);
  });

  it("names file, line and column of a YAML syntax error", () => {
    const file = write("server:\n  port: 1\ncatalogs: [a,\n  b: : c\n");
    const problems = problemsOf(file);
    expect(problems[0]).toMatch(new RegExp(`^${file}:4:\\d+: YAML syntax error: `));
  });

  it("rejects a file whose top level is not a mapping", () => {
    expect(problemsOf(write("- a\n- b\n"))[0]).toContain("(top level): must be a mapping");
  });

  it("says so when the file does not exist", () => {
    expect(problemsOf(join(dir, "missing.yaml"))[0]).toContain(
      "missing.yaml: cannot read the config file (not found)",
    );
  });
});

describe("loadConfig connection limits", () => {
  it("reads the connection timeouts in seconds, fractions allowed, and the connection cap", () => {
    const file = write(
      "server: {handshake_timeout_seconds: 0.5, request_header_timeout_seconds: 2, request_body_timeout_seconds: 5, idle_timeout_seconds: 60, max_connections: 100}\n",
    );
    expect(loadConfig(file, {}).server).toMatchObject({
      handshakeTimeoutSeconds: 0.5,
      requestHeaderTimeoutSeconds: 2,
      requestBodyTimeoutSeconds: 5,
      idleTimeoutSeconds: 60,
      maxConnections: 100,
    });
  });

  it("rejects a zero timeout and a cap of no connections, saying what to change", () => {
    const file = write(
      [
        "server:",
        "  idle_timeout_seconds: 0",
        "  handshake_timeout_seconds: -1",
        "  max_connections: 0",
      ].join("\n"),
    );
    expect(problemsOf(file)).toEqual([
      `${file}:2:25: server.idle_timeout_seconds: must be more than 0, got 0; raise it`,
      `${file}:3:30: server.handshake_timeout_seconds: must be more than 0, got -1; raise it`,
      `${file}:4:20: server.max_connections: must be at least 1, got 0; raise it`,
    ]);
  });
});

describe("loadConfig with YAML aliases", () => {
  it("rejects a config whose aliases expand past the bound, naming the file", () => {
    const file = write(yamlAliasBomb());
    expect(problemsOf(file)).toEqual([
      `${file}: its aliases expand to more than 100 nodes; use fewer anchors and aliases (*name)`,
    ]);
  });
});

describe("loadConfig uniqueness", () => {
  it("rejects two MCP servers with one name (the name is their namespace)", () => {
    const file = write(
      "mcp_servers:\n  - {name: gh, transport: http, url: 'http://a/mcp'}\n  - {name: gh, transport: http, url: 'http://b/mcp'}\n",
    );
    expect(problemsOf(file)).toEqual([
      `${file}:3:12: mcp_servers[1].name: duplicates mcp_servers[0].name; give each entry its own name`,
    ]);
  });

  it("rejects a namespace another MCP server's tools, prompts and resources already go under", () => {
    const file = write(
      "mcp_servers:\n  - {name: gh, transport: http, url: 'http://a/mcp'}\n" +
        "  - {name: gh2, namespace: gh, transport: http, url: 'http://b/mcp'}\n",
    );
    expect(problemsOf(file)).toEqual([
      `${file}:3:28: mcp_servers[1].namespace: duplicates the namespace of mcp_servers[0]; give each server its own (namespace: sets one)`,
    ]);
  });
});

describe("applyCliOverrides", () => {
  it("lets serve flags win over environment and file, validated like the YAML keys", () => {
    const fromEnv = loadConfig(write("server: {port: 7000}\n"), { WAYFIND_PORT: "7001" });
    const config = applyCliOverrides(fromEnv, { port: "0", host: "::1", dataDir: "rel/dir" });
    expect(config.server).toMatchObject({ port: 0, host: "::1", dataDir: resolve("rel/dir") });
  });

  it("rejects a bad flag, naming it", () => {
    expect(() => applyCliOverrides(defaultConfig(), { port: 70000 })).toThrow(
      "command line: --port: must be at most 65535, got 70000; set a whole number from 0 to 65535",
    );
  });
});

describe("loadConfig storage", () => {
  it("keeps the state in SQLite when neither storage.postgres nor WAYFIND_DATABASE_URL is set", () => {
    expect(loadConfig(write(""), {}).storage.postgres).toBeUndefined();
  });

  const defaultCompaction = { everyChanges: 10_000, checkIntervalMs: 60_000, replicaTimeoutMs: 900_000 };

  it("reads storage.postgres with its pool size and log compaction, defaults for what is unset", () => {
    const url = "postgres://wayfind:secret@db.internal:5432/wayfind";
    const compaction =
      "compaction: {every_changes: 500, check_interval_seconds: 0.5, replica_timeout_seconds: 30}";
    expect(
      loadConfig(write(`storage: {postgres: {url: '${url}', pool_size: 4, ${compaction}}}\n`), {}).storage,
    ).toEqual({
      postgres: {
        url,
        poolSize: 4,
        compaction: { everyChanges: 500, checkIntervalMs: 500, replicaTimeoutMs: 30_000 },
      },
    });
    expect(loadConfig(write(`storage: {postgres: {url: '${url}'}}\n`), {}).storage.postgres).toEqual({
      url,
      poolSize: 10,
      compaction: defaultCompaction,
    });
  });

  it("lets WAYFIND_DATABASE_URL set the URL, keeping the file's other settings", () => {
    const file = write(
      "storage: {postgres: {url: 'postgres://a/b', pool_size: 3, compaction: {every_changes: 7}}}\n",
    );
    const config = loadConfig(file, { WAYFIND_DATABASE_URL: "postgresql://c:5433/d" });
    expect(config.storage.postgres).toEqual({
      url: "postgresql://c:5433/d",
      poolSize: 3,
      compaction: { ...defaultCompaction, everyChanges: 7 },
    });
    expect(loadConfig(write(""), { WAYFIND_DATABASE_URL: "postgresql://c:5433/d" }).storage.postgres).toEqual(
      {
        url: "postgresql://c:5433/d",
        poolSize: 10,
        compaction: defaultCompaction,
      },
    );
  });

  it("rejects a URL that is not PostgreSQL's, in the file and in the environment", () => {
    const file = write("storage: {postgres: {url: 'mysql://db/wayfind'}}\n");
    expect(problemsOf(file)).toEqual([
      `${file}:1:27: storage.postgres.url: must be a PostgreSQL URL: postgres://user:password@host:5432/database`,
    ]);
    expect(problemsOf(write(""), { WAYFIND_DATABASE_URL: "db.internal:5432" })).toEqual([
      "environment: WAYFIND_DATABASE_URL: must be a PostgreSQL URL (postgres://user:password@host:5432/database); fix it or unset WAYFIND_DATABASE_URL to keep the state in SQLite",
    ]);
  });
});
