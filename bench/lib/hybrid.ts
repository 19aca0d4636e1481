/**
 * A catalog searched as a server searches it by default (hybrid: words fused with meaning), for the
 * quality benches: the shipped model, the tools' vectors synced in the background and awaited, every
 * request read and embedded as ToolService does (IndexHost.prepare and meaningOf, SemanticSearch.evidence) — by
 * the model, or by its static tier alone (what a server answers with when the model is not in time).
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
import { EmbedderBusy, type QueryEmbedder } from "../../src/semantic/embedder.ts";
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
  /** Semantic ranking by the model; undefined without an embedder. */
  readonly semantic: SemanticSearch<SearchIndex> | undefined;
  /** Semantic ranking by the model's static tier alone; undefined without one. */
  readonly semanticStatic: SemanticSearch<SearchIndex> | undefined;
  readonly db: Db;
  /** Tool names as registered, for gold names given as aliases. */
  readonly aliasOf: ReadonlyMap<string, string>;
  /** The top `limit` names by words alone (semantic off). */
  lexical(query: string, limit?: number): string[];
  /** The top `limit` names as the default server ranks them, every request read by `tier`. */
  hybrid(query: string, limit?: number, tier?: BenchTier): Promise<string[]>;
  close(): Promise<void>;
}

/** Which tier reads a request: the model (waited for), or its static tier alone. */
export type BenchTier = "model" | "static";

/** The model under test: the shipped one unless WAYFIND_MODEL_DIR names another folder of its layout. */
export const BENCH_MODEL_DIR = process.env.WAYFIND_MODEL_DIR ?? DEFAULTS.toolSearch.semantic.modelDir;

/**
 * `files` (under data/eval, or absolute paths) registered as one catalog, a tool of a name only once
 * (the first file's), with every vector computed before this resolves. Without an embedder, only
 * `lexical` answers. `calibration`: how both tiers' cosines become scores, if not the model folder's
 * own curves (the calibration bench fits them).
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
  const searchBy = (reader: QueryEmbedder) =>
    semanticToolSearch({
      db,
      embedder: reader,
      weight: DEFAULTS.toolSearch.semantic.weight,
      // The quality benches rank every request by meaning: they wait for the model.
      maxWaitMs: 600_000,
      ...(calibration ? { calibration, staticCalibration: calibration } : {}),
    });
  const semantic = embedder && searchBy(embedder);
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
  const built = await index.ready();
  await semantic?.settled();
  // The static tier's search reads the vectors the model stored for the tools (nothing embedded again).
  const semanticStatic = embedder?.staticTier && searchBy(staticOnly(embedder));
  semanticStatic?.catalogChanged(built, toolTexts(built));
  await semanticStatic?.settled();
  return {
    registry,
    index,
    semantic,
    semanticStatic,
    db,
    aliasOf,
    lexical: (query, limit = 20) => index.search({ query: clipQuery(query), limit }).tools.map((t) => t.name),
    async hybrid(query, limit = 20, tier = "model") {
      const search = tier === "static" ? semanticStatic : semantic;
      if (search === undefined) throw new Error(`openHybrid: no ${tier} tier (${BENCH_MODEL_DIR})`);
      const prepared = index.prepare({ query: clipQuery(query), limit });
      const evidence = await search.evidence(index.meaningOf(prepared));
      return index.searchPrepared(prepared, { semantic: evidence }).tools.map((t) => t.name);
    },
    async close() {
      await semantic?.close();
      await semanticStatic?.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The embedder as a server sees it when the model is never in time: every request read by the static tier. */
export function staticOnly(embedder: Embedder): QueryEmbedder {
  return {
    modelId: embedder.modelId,
    dims: embedder.dims,
    calibration: embedder.calibration,
    staticTier: embedder.staticTier,
    embedTexts: (texts) => embedder.embedTexts(texts),
    embedQuery: () => Promise.reject(new EmbedderBusy("the bench reads requests by the static tier")),
    embedLater: () => {},
    cachedQuery: () => undefined,
    expectedWaitMs: () => Number.POSITIVE_INFINITY,
    idle: false,
  };
}
