/**
 * A catalog searched as a server searches it by default (hybrid: words fused with meaning), for the
 * quality benches: the shipped model, the tools' vectors synced in the background and awaited, every
 * request read and embedded as ToolService does (IndexHost.meaningOf, SemanticSearch.evidence).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS } from "../../src/config/defaults.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import {
  discoveryMigrations,
  IndexHost,
  parseCatalogFile,
  type SearchIndex,
  ToolRegistry,
} from "../../src/discovery/index.ts";
import { learningMigrations } from "../../src/learning/index.ts";
import type { ScoreCalibration } from "../../src/semantic/calibration.ts";
import {
  type Embedder,
  type SemanticSearch,
  semanticMigrations,
  semanticToolSearch,
  toolTexts,
} from "../../src/semantic/index.ts";
import { clipQuery, DATA_DIR, PUBLIC_DUMP } from "./discovery-data.ts";

export interface HybridCatalog {
  readonly registry: ToolRegistry;
  readonly index: IndexHost;
  /** Semantic ranking; undefined without an embedder. */
  readonly semantic: SemanticSearch<SearchIndex> | undefined;
  readonly db: Db;
  /** Tool names as registered, for gold names given as aliases. */
  readonly aliasOf: ReadonlyMap<string, string>;
  /** The top `limit` names by words alone (semantic off). */
  lexical(query: string, limit?: number): string[];
  /** The top `limit` names as the default server ranks them. */
  hybrid(query: string, limit?: number): Promise<string[]>;
  close(): Promise<void>;
}

/** The model under test: the shipped one unless WAYFIND_MODEL_DIR names another folder of its layout. */
export const BENCH_MODEL_DIR = process.env.WAYFIND_MODEL_DIR ?? DEFAULTS.toolSearch.semantic.modelDir;

/**
 * `files` (under data/eval, or absolute paths) registered as one catalog, a tool of a name only once
 * (the first file's), with every vector computed before this resolves. Without an embedder, only
 * `lexical` answers. `calibration`: how cosines become scores, if not the model's own.
 */
export async function openHybrid(
  files: readonly string[],
  embedder?: Embedder,
  calibration?: ScoreCalibration,
): Promise<HybridCatalog> {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-hybrid-"));
  const db = openDatabase(join(dir, "wayfind.db"), [
    ...discoveryMigrations,
    ...semanticMigrations,
    ...learningMigrations,
  ]);
  const semantic =
    embedder &&
    semanticToolSearch({
      db,
      embedder,
      weight: DEFAULTS.toolSearch.semantic.weight,
      // The quality benches rank every request by meaning: they wait for it.
      maxWaitMs: 600_000,
      ...(calibration ? { calibration } : {}),
    });
  const registry = new ToolRegistry(db);
  const index = new IndexHost(registry, {
    onIndexBuilt: (built) => semantic?.catalogChanged(built, toolTexts(built)),
    ...(embedder ? { modelWords: embedder.words } : {}),
  });
  const aliasOf = new Map<string, string>();
  const seen = new Set<string>();
  for (const file of files) {
    const path = file.startsWith("/") ? file : join(DATA_DIR, file);
    const tools = parseCatalogFile(path, PUBLIC_DUMP).tools.filter((t) => {
      const name = t.namespace ? `${t.namespace}.${t.name}` : t.name;
      if (seen.has(name)) return false;
      seen.add(name);
      return true;
    });
    for (const t of tools) for (const alias of t.aliases ?? []) aliasOf.set(alias, t.name);
    await registry.register(file.replace(/[^A-Za-z0-9_.-]/g, "_").slice(-100), tools);
  }
  await index.ready();
  await semantic?.settled();
  return {
    registry,
    index,
    semantic,
    db,
    aliasOf,
    lexical: (query, limit = 20) => index.search({ query: clipQuery(query), limit }).tools.map((t) => t.name),
    async hybrid(query, limit = 20) {
      if (semantic === undefined) throw new Error("openHybrid: no embedder, words only");
      const clipped = clipQuery(query);
      const evidence = await semantic.evidence(index.meaningOf({ query: clipped }));
      return index.search({ query: clipped, limit, semantic: evidence }).tools.map((t) => t.name);
    },
    async close() {
      await semantic?.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
