/**
 * MCP sync benchmark: `node --import tsx bench/mcp-sync.ts [runs]`.
 * Three real stdio MCP servers (server-everything, server-memory, server-filesystem, spawned with
 * `node <bin>` exactly as a config would) feeding one catalog:
 *  - cold: fresh SQLite → spawn + initialize + tools/list + register → first search answered
 *  - warm restart: reopen the persisted catalog → first search answered (before any MCP sync)
 *  - re-sync when nothing changed: tools/list on the live connections + register no-op
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pino from "pino";
import { DEFAULTS } from "../src/config/defaults.ts";
import type { McpServerConfig } from "../src/config/index.ts";
import { openDatabase } from "../src/database/sqlite.ts";
import { IndexHost, ToolRegistry } from "../src/discovery/index.ts";
import { allMigrations } from "../src/server/migrations.ts";
import { McpSources } from "../src/sources/mcp-sources.ts";

const require = createRequire(import.meta.url);
const runs = Number(process.argv[2] ?? 5);

function bin(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> };
  return join(dirname(manifest), Object.values(bin)[0] ?? "");
}

function stdio(name: string, args: string[], env: Record<string, string> = {}): McpServerConfig {
  return {
    name,
    namespace: name,
    transport: "stdio",
    command: process.execPath,
    args,
    env,
    cwd: undefined,
    ...DEFAULTS.mcpServer,
    loadingMode: "deferred",
    alwaysLoaded: [],
    deferred: [],
    examples: {},
    tags: [],
  };
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  return `median ${q(0.5).toFixed(1)} ms  min ${(s[0] ?? 0).toFixed(1)}  p90 ${q(0.9).toFixed(1)}  (n=${s.length})`;
};

const logger = pino({ level: "silent" });
const cold: number[] = [];
const warm: number[] = [];
const resync: number[] = [];
let toolCount = 0;
for (let run = 0; run < runs; run++) {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-mcp-"));
  const configs = [
    stdio("everything", [bin("@modelcontextprotocol/server-everything"), "stdio"]),
    stdio("memory", [bin("@modelcontextprotocol/server-memory")], { MEMORY_FILE_PATH: join(dir, "m.jsonl") }),
    stdio("fs", [bin("@modelcontextprotocol/server-filesystem"), dir]),
  ];
  const file = join(dir, "wayfind.db");
  let db = openDatabase(file, allMigrations);
  let registry = new ToolRegistry(db);
  let index = new IndexHost(registry);
  let started = performance.now();
  const sources = new McpSources({ configs, registry, logger });
  await sources.start(60_000);
  const hits = index.search({ query: "read a text file", limit: 3 });
  cold.push(performance.now() - started);
  if (!sources.statuses().every((s) => s.healthy) || hits.tools.length === 0)
    throw new Error(`sync failed: ${JSON.stringify(sources.statuses())}`);
  toolCount = registry.size;

  for (let i = 0; i < 10; i++) {
    const fingerprint = registry.fingerprint();
    started = performance.now();
    await Promise.all(sources.sources.map((s) => s.sync()));
    resync.push(performance.now() - started);
    if (registry.fingerprint() !== fingerprint) throw new Error("an unchanged re-sync changed the catalog");
  }
  await sources.close();
  db.close();

  started = performance.now();
  db = openDatabase(file, allMigrations);
  registry = new ToolRegistry(db);
  index = new IndexHost(registry);
  const again = index.search({ query: "read a text file", limit: 3 });
  warm.push(performance.now() - started);
  if (again.tools.length === 0) throw new Error("persisted catalog not searchable");
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`3 stdio MCP servers, ${toolCount} tools, node ${process.version}`);
console.log(`cold start → searchable catalog:          ${stats(cold)}`);
console.log(`warm restart → searchable (persisted):    ${stats(warm)}`);
console.log(`re-sync, nothing changed (3 in parallel): ${stats(resync)}`);
