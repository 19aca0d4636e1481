import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import {
  discoveryMigrations,
  IndexHost,
  type IndexHostOptions,
  parseCatalogFile,
  type ToolInput,
  ToolRegistry,
} from "../../src/discovery/index.ts";
import { LIMITS as TOOL_LIMITS } from "../../src/discovery/validate.ts";
import { LIMITS } from "../../src/limits.ts";

/** The public evaluation data vendored in the repository (sources and licences: data/eval/README.md). */
export const DATA_DIR = resolve(import.meta.dirname, "../../data/eval");
/** The public catalogs are servers' tools as their authors wrote them, a few schemas not quite valid. */
export const PUBLIC_DUMP = { invalidSchemas: "warn" } as const;

/** A query as a client must send it: within the API's length limit, cut at a word boundary. */
export function clipQuery(query: string): string {
  const max = LIMITS.searchToolsQuery.max;
  if (query.length <= max) return query;
  const cut = query.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return space > max / 2 ? cut.slice(0, space) : cut;
}

export interface Query {
  readonly id: string;
  readonly query: string;
  readonly gold: readonly string[];
}

export function readQueries(file: string): Query[] {
  return readFileSync(join(DATA_DIR, file), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Query);
}

/** The shared catalogs a large catalog is grown from (see growCatalog). */
export const GROW_CATALOGS = [
  "toolbench_catalog.jsonl",
  "mcp_catalog.jsonl",
  "livemcpbench_catalog.jsonl",
  "metatool_catalog.jsonl",
] as const;

/** The shared catalogs' tools, each name once (mcp and livemcpbench share some servers: the first). */
export function publicCatalog(): ToolInput[] {
  const seen = new Set<string>();
  const base = GROW_CATALOGS.flatMap((f) => parseCatalogFile(join(DATA_DIR, f), PUBLIC_DUMP).tools).filter(
    (t) => {
      const full = t.namespace ? `${t.namespace}.${t.name.replace(`${t.namespace}.`, "")}` : t.name;
      if (seen.has(full)) return false;
      seen.add(full);
      return true;
    },
  );
  if (base.length === 0) throw new Error(`no tools in the shared catalogs under ${DATA_DIR}`);
  return base;
}

/**
 * A `target`-tool catalog (default 10,000) grown from the shared catalogs: their tools once, then
 * copies until the target, copy n in namespace `copyN` (names stay distinct and realistic).
 */
export function growCatalog(target = 10_000): ToolInput[] {
  const base = publicCatalog();
  const out: ToolInput[] = [];
  for (let copy = 0; out.length < target; copy++)
    for (const t of base) {
      if (out.length >= target) break;
      out.push(copy === 0 ? t : { ...t, namespace: `copy${copy}`, aliases: [] });
    }
  return out;
}

/** A fresh catalog in a temp SQLite file, loaded with the given shared catalog files. */
export async function openCatalog(
  files: readonly string[],
  options: IndexHostOptions = {},
): Promise<{
  registry: ToolRegistry;
  index: IndexHost;
  db: Db;
  close: () => void;
  aliasOf: Map<string, string>;
}> {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-"));
  const db = openDatabase(join(dir, "wayfind.db"), discoveryMigrations);
  const registry = new ToolRegistry(db);
  const index = new IndexHost(registry, options);
  const aliasOf = new Map<string, string>();
  for (const f of files) {
    const parsed = parseCatalogFile(join(DATA_DIR, f), PUBLIC_DUMP);
    for (const t of parsed.tools) for (const a of t.aliases ?? []) aliasOf.set(a, t.name);
    await registry.register(f, parsed.tools);
  }
  return {
    registry,
    index,
    db,
    aliasOf,
    close: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Deterministic sample: every k-th item so the share is roughly `max`. */
export function sample<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  const step = items.length / max;
  const out: T[] = [];
  for (let i = 0; i < max; i++) {
    const item = items[Math.floor(i * step)];
    if (item !== undefined) out.push(item);
  }
  return out;
}

export function table(rows: readonly (readonly (string | number)[])[]): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === "number" ? c.toFixed(3) : c)));
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length))) ?? [];
  return cells.map((r) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`).join("\n");
}

/**
 * Writes `tools` into `dir` as catalog files a source may hold (at most TOOL_LIMITS.toolsPerSource
 * tools each) and returns the config's `catalogs:` block naming them, loaded as the public catalogs
 * are (invalid_schemas: warn, as PUBLIC_DUMP reads them here).
 */
export function writeCatalogFiles(dir: string, tools: readonly ToolInput[]): string {
  const files: string[] = [];
  for (let start = 0; start < tools.length; start += TOOL_LIMITS.toolsPerSource) {
    const file = `tools-${files.length}.jsonl`;
    const part = tools.slice(start, start + TOOL_LIMITS.toolsPerSource);
    writeFileSync(join(dir, file), `${part.map((t) => JSON.stringify(t)).join("\n")}\n`);
    files.push(file);
  }
  return `catalogs:\n${files.map((file) => `  - path: ${file}\n    invalid_schemas: warn\n`).join("")}`;
}
