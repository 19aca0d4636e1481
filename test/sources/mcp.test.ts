import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadConfig, type McpServerConfig } from "../../src/config/index.ts";
import { openDatabase } from "../../src/database/sqlite.ts";
import { allMigrations } from "../../src/server/migrations.ts";
import type { McpSource, McpTimeouts } from "../../src/sources/mcp.ts";
import { McpSources } from "../../src/sources/mcp-sources.ts";
import { type Catalog, catalogOn } from "../discovery/helpers.ts";
import { EVERYTHING, FILESYSTEM, MEMORY, startHttpMcpServer, startRawHttpMcpServer } from "./mcp-servers.ts";

const FAST: Partial<McpTimeouts> = {
  connectMs: 5_000,
  requestMs: 1_000,
  syncMs: 3_000,
  backoffInitialMs: 50,
  backoffMaxMs: 200,
  debounceMs: 20,
};
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "wayfind-mcp-"));
}

/** `mcp_servers` entries as a user writes them, through the real config loader. */
function mcpConfigs(servers: Record<string, unknown>[]): McpServerConfig[] {
  const dir = tempDir();
  const file = join(dir, "wayfind.yaml");
  writeFileSync(file, stringify({ mcp_servers: servers }));
  return [...loadConfig(file, {}).mcpServers];
}

function openCatalog(file = join(tempDir(), "wayfind.db")) {
  const db = openDatabase(file, allMigrations);
  cleanups.push(() => {
    if (db.open) db.close();
  });
  return { catalog: catalogOn(db), db, file };
}

function sources(catalog: Catalog, servers: Record<string, unknown>[], timeouts = FAST) {
  const set = new McpSources({
    configs: mcpConfigs(servers),
    registry: catalog.registry,
    logger: pino({ level: "silent" }),
    timeouts,
  });
  cleanups.push(() => set.close());
  return set;
}

function source(catalog: Catalog, server: Record<string, unknown>, timeouts = FAST): McpSource {
  const set = sources(catalog, [server], timeouts);
  return set.sources[0] as McpSource;
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const namesOf = (catalog: Catalog, source: string) =>
  [...catalog.registry.all()]
    .filter((t) => t.source === source)
    .map((t) => t.name)
    .sort();

describe("MCP servers over stdio (real npm servers)", () => {
  it("registers the tools of everything, memory and filesystem under their namespaces, searchable", async () => {
    const { catalog } = openCatalog();
    const dir = tempDir();
    const set = sources(catalog, [
      { name: "everything", transport: "stdio", ...EVERYTHING() },
      { name: "memory", transport: "stdio", ...MEMORY(), env: { MEMORY_FILE_PATH: join(dir, "m.jsonl") } },
      { name: "fs", transport: "stdio", ...FILESYSTEM(dir) },
    ]);
    await set.start(20_000);
    for (const status of set.statuses()) expect(status).toMatchObject({ healthy: true, lastError: "" });
    expect(namesOf(catalog, "mcp:everything")).toContain("everything.echo");
    expect(namesOf(catalog, "mcp:memory")).toContain("memory.create_entities");
    expect(namesOf(catalog, "mcp:fs")).toContain("fs.read_text_file");
    const hits = catalog.index.search({ query: "knowledge graph entities", limit: 3 });
    expect(hits.tools[0]?.name).toMatch(/^memory\./);
  }, 30_000);

  it("maps title, schemas and annotations (readOnlyHint → read, idempotentHint → tag)", async () => {
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "everything", transport: "stdio", ...EVERYTHING() });
    await src.start();
    const [echo] = catalog.registry.lookup("everything.echo", "");
    expect(echo).toMatchObject({
      namespace: "everything",
      source: "mcp:everything",
      title: "Echo Tool",
      sideEffects: "read",
      loadingMode: "deferred",
    });
    expect(echo?.tags).toContain("idempotent");
    expect(echo?.argsSchema).toMatchObject({ type: "object", properties: { message: { type: "string" } } });
    const structured = catalog.registry.lookup("everything.get-structured-content", "")[0];
    expect(structured?.outputSchema).toMatchObject({ type: "object" });
  }, 20_000);

  it("applies per-server options: always_loaded, tags and examples", async () => {
    const { catalog } = openCatalog();
    const src = source(catalog, {
      name: "everything",
      transport: "stdio",
      ...EVERYTHING(),
      always_loaded: ["everything.echo"],
      tags: ["demo"],
      examples: { echo: [{ args: { message: "hi" }, description: "say hi" }] },
    });
    await src.start();
    const [echo] = catalog.registry.lookup("everything.echo", "");
    expect(echo?.loadingMode).toBe("always");
    expect(echo?.tags).toEqual(expect.arrayContaining(["demo", "idempotent"]));
    expect(echo?.examples).toEqual([{ args: { message: "hi" }, description: "say hi", tags: [] }]);
  }, 20_000);

  it("re-syncing an unchanged server changes nothing", async () => {
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "memory", transport: "stdio", ...MEMORY() });
    await src.start();
    const before = catalog.registry.fingerprint();
    const tools = [...catalog.registry.all()];
    await src.sync();
    expect(catalog.registry.fingerprint()).toBe(before);
    expect([...catalog.registry.all()]).toEqual(tools);
    expect(src.status().healthy).toBe(true);
  }, 20_000);

  it("close() ends the stdio child so nothing is left running", async () => {
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "memory", transport: "stdio", ...MEMORY() });
    await src.start();
    const pid = src.pid as number;
    expect(pid).toBeGreaterThan(0);
    const started = Date.now();
    await src.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  }, 20_000);

  it("a stdio server that dies is marked unhealthy, keeps its tools, and is restarted", async () => {
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "memory", transport: "stdio", ...MEMORY() });
    await src.start();
    const tools = namesOf(catalog, "mcp:memory");
    const pid = src.pid as number;
    process.kill(pid, "SIGKILL");
    await until(() => !src.status().healthy);
    expect(src.status().lastError).toMatch(/connection closed/);
    expect(namesOf(catalog, "mcp:memory")).toEqual(tools);
    await until(() => src.status().healthy, 10_000);
    expect(src.pid).not.toBe(pid);
    expect(namesOf(catalog, "mcp:memory")).toEqual(tools);
  }, 20_000);
});

describe("MCP servers over streamable HTTP", () => {
  it("registers the tools of an McpServer and re-lists on tools/list_changed", async () => {
    const http = await startHttpMcpServer([
      { name: "lookup_order", description: "Look up an order by id.", readOnly: true },
    ]);
    cleanups.push(() => http.close());
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "shop", transport: "http", url: http.url });
    await src.start();
    expect(namesOf(catalog, "mcp:shop")).toEqual(["shop.lookup_order"]);
    expect(catalog.registry.lookup("shop.lookup_order", "")[0]?.sideEffects).toBe("read");

    http.addTool({ name: "refund_order", description: "Refund an order." });
    await until(() => namesOf(catalog, "mcp:shop").length === 2);
    expect(namesOf(catalog, "mcp:shop")).toEqual(["shop.lookup_order", "shop.refund_order"]);
    expect(catalog.registry.lookup("shop.refund_order", "")[0]?.sideEffects).toBe("write");
  }, 15_000);

  it("re-lists on the configured interval", async () => {
    const tools: unknown[] = [{ name: "a", inputSchema: { type: "object" } }];
    const raw = await startRawHttpMcpServer(async () => ({ tools }));
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "raw", transport: "http", url: raw.url, sync_interval_seconds: 1 });
    await src.start();
    tools.push({ name: "b", inputSchema: { type: "object" } });
    await until(() => namesOf(catalog, "mcp:raw").length === 2, 4_000);
  }, 10_000);

  it("a server that goes away keeps its last good catalog, is unhealthy, and recovers with backoff", async () => {
    const http = await startHttpMcpServer([{ name: "lookup_order", description: "Look up an order." }]);
    cleanups.push(() => http.close());
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "shop", transport: "http", url: http.url });
    await src.start();
    http.setDown(true);
    await src.sync();
    expect(src.status().healthy).toBe(false);
    expect(src.status().lastError).toMatch(/tools\/list failed/);
    expect(namesOf(catalog, "mcp:shop")).toEqual(["shop.lookup_order"]);
    expect(catalog.index.search({ query: "order" }).tools.map((t) => t.name)).toContain("shop.lookup_order");

    http.setDown(false);
    await until(() => src.status().healthy, 5_000);
    expect(namesOf(catalog, "mcp:shop")).toEqual(["shop.lookup_order"]);
  }, 15_000);

  it("follows nextCursor through every page", async () => {
    const pages: Record<string, { tools: unknown[]; nextCursor?: string }> = {
      "": { tools: [{ name: "one", inputSchema: { type: "object" } }], nextCursor: "p2" },
      p2: { tools: [{ name: "two", inputSchema: { type: "object" } }], nextCursor: "p3" },
      p3: { tools: [{ name: "three", inputSchema: { type: "object" } }] },
    };
    const raw = await startRawHttpMcpServer(async (cursor) => pages[cursor ?? ""] ?? { tools: [] });
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "paged", transport: "http", url: raw.url });
    await src.start();
    expect(namesOf(catalog, "mcp:paged")).toEqual(["paged.one", "paged.three", "paged.two"]);
  }, 10_000);
});

describe("misbehaving MCP servers", () => {
  it("a command that does not exist: unhealthy with a clear error, nothing registered, others unaffected", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("catalog:other", [{ name: "keep_me", description: "Still here." }]);
    const set = sources(catalog, [
      { name: "ghost", transport: "stdio", command: "wayfind-no-such-command-xyz" },
    ]);
    await set.start(5_000);
    const [status] = set.statuses();
    expect(status?.healthy).toBe(false);
    expect(status?.lastError).toContain("command not found: wayfind-no-such-command-xyz");
    expect(namesOf(catalog, "mcp:ghost")).toEqual([]);
    expect(namesOf(catalog, "catalog:other")).toEqual(["keep_me"]);
  }, 10_000);

  it("a server that crashes at start keeps the catalog persisted by an earlier run", async () => {
    const { catalog, db, file } = openCatalog();
    const first = source(catalog, { name: "memory", transport: "stdio", ...MEMORY() });
    await first.start();
    await first.close();
    const before = namesOf(catalog, "mcp:memory");
    expect(before.length).toBeGreaterThan(0);
    db.close();

    const reopened = openCatalog(file).catalog;
    const broken = source(reopened, {
      name: "memory",
      transport: "stdio",
      command: "node",
      args: ["-e", "console.error('boom: cannot open store'); process.exit(3)"],
    });
    await broken.start();
    expect(broken.status().healthy).toBe(false);
    expect(broken.status().lastError).toMatch(/connect failed: .*boom: cannot open store/);
    expect(namesOf(reopened, "mcp:memory")).toEqual(before);
  }, 20_000);

  it("a server that writes garbage and never answers initialize times out instead of blocking", async () => {
    const { catalog } = openCatalog();
    const src = source(
      catalog,
      {
        name: "garbage",
        transport: "stdio",
        command: "node",
        args: ["-e", "setInterval(() => process.stdout.write('not json at all\\n{{{\\n'), 50)"],
      },
      { ...FAST, connectMs: 500 },
    );
    const started = Date.now();
    await src.start();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(src.status()).toMatchObject({ healthy: false });
    expect(src.status().lastError).toMatch(/timed out|connect failed/);
  }, 10_000);

  it("a server whose tools/list hangs: the sync times out, the last good catalog stays", async () => {
    let hang = false;
    const raw = await startRawHttpMcpServer(async () =>
      hang ? new Promise(() => {}) : { tools: [{ name: "ping", inputSchema: { type: "object" } }] },
    );
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const src = source(
      catalog,
      { name: "slow", transport: "http", url: raw.url },
      { ...FAST, requestMs: 300 },
    );
    await src.start();
    hang = true;
    const started = Date.now();
    await src.sync();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(src.status().lastError).toMatch(/timed out/i);
    expect(namesOf(catalog, "mcp:slow")).toEqual(["slow.ping"]);
  }, 10_000);

  it("startup waits at most the given time for a server that never answers", async () => {
    const raw = await startRawHttpMcpServer(async () => new Promise(() => {}));
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const set = sources(catalog, [{ name: "stuck", transport: "http", url: raw.url }], {
      ...FAST,
      requestMs: 10_000,
      syncMs: 10_000,
    });
    const started = Date.now();
    await set.start(300);
    expect(Date.now() - started).toBeLessThan(1_500);
  }, 10_000);

  it("invalid schemas and duplicate names skip only those tools, reported in the status", async () => {
    const raw = await startRawHttpMcpServer(async () => ({
      tools: [
        { name: "good", description: "Fine.", inputSchema: { type: "object" } },
        { name: "no_schema", description: "Missing inputSchema." },
        { name: "array_schema", inputSchema: { type: "array" } },
        { name: "bad name!", inputSchema: { type: "object" } },
        { name: "good", description: "Again.", inputSchema: { type: "object" } },
        42,
      ],
    }));
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "messy", transport: "http", url: raw.url });
    await src.start();
    expect(namesOf(catalog, "mcp:messy")).toEqual(["messy.good"]);
    expect(catalog.registry.lookup("messy.good", "")[0]?.description).toBe("Fine.");
    const { healthy, lastError } = src.status();
    expect(healthy).toBe(false);
    expect(lastError).toMatch(/^5 of 6 tools skipped/);
    expect(lastError).toContain('tool "no_schema": inputSchema');
    expect(lastError).toContain('tool "array_schema": inputSchema.type');
    expect(lastError).toContain("bad name!");
    expect(lastError).toContain('tool "good" is listed more than once');
    expect(lastError).toContain("tool #5");
  }, 10_000);

  it("loads a tool whose schema breaks JSON Schema's rules as the server sent it, warning with tool and path", async () => {
    const raw = await startRawHttpMcpServer(async () => ({
      tools: [{ name: "pay", inputSchema: { type: "object", properties: { amount: { type: "integr" } } } }],
    }));
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const warnings: Record<string, unknown>[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    const set = new McpSources({
      configs: mcpConfigs([{ name: "vendor", transport: "http", url: raw.url }]),
      registry: catalog.registry,
      logger,
      timeouts: FAST,
    });
    cleanups.push(() => set.close());
    await set.start(5_000);
    expect(namesOf(catalog, "mcp:vendor")).toEqual(["vendor.pay"]);
    expect(set.sources[0]?.status().healthy).toBe(true);
    expect(warnings).toContainEqual(
      expect.objectContaining({
        tool: "vendor.pay",
        path: "/properties/amount/type",
        problem: '"integr" is not one of array, boolean, integer, null, number, object, string',
      }),
    );
  }, 10_000);

  it("a tool name taken by another source is skipped with the owner named; the rest registers", async () => {
    const raw = await startRawHttpMcpServer(async () => ({
      tools: [
        { name: "send", inputSchema: { type: "object" } },
        { name: "receive", inputSchema: { type: "object" } },
      ],
    }));
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    await catalog.registry.register("team-api", [
      { name: "send", namespace: "mail", description: "API-registered send." },
    ]);
    const src = source(catalog, { name: "mail", transport: "http", url: raw.url });
    await src.start();
    expect(namesOf(catalog, "mcp:mail")).toEqual(["mail.receive"]);
    expect(catalog.registry.lookup("mail.send", "")[0]?.source).toBe("team-api");
    expect(src.status().lastError).toContain('tool "mail.send" is already registered by source "team-api"');
  }, 10_000);

  it("a list where no tool is valid keeps the last good catalog instead of emptying it", async () => {
    let broken = false;
    const raw = await startRawHttpMcpServer(async () => ({
      tools: [
        broken ? { name: "ping", inputSchema: "nope" } : { name: "ping", inputSchema: { type: "object" } },
      ],
    }));
    cleanups.push(() => raw.close());
    const { catalog } = openCatalog();
    const src = source(catalog, { name: "flaky", transport: "http", url: raw.url });
    await src.start();
    broken = true;
    await src.sync();
    expect(src.status().healthy).toBe(false);
    expect(src.status().lastError).toMatch(/none of the 1 listed tools/);
    expect(namesOf(catalog, "mcp:flaky")).toEqual(["flaky.ping"]);
  }, 10_000);

  it("drops the tools of an MCP server removed from the config", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("mcp:gone", [{ name: "old", namespace: "gone" }]);
    const set = sources(catalog, []);
    await set.start(100);
    expect(namesOf(catalog, "mcp:gone")).toEqual([]);
  });
});
