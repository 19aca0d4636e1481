import type { Db, Migration } from "../database/sqlite.ts";
import type { TextEmbedder } from "./embedder.ts";

/** Least time between two rebuilds of the packed vectors while a sync adds to them. */
const REPACK_INTERVAL_MS = 1_000;

/** Vectors written per transaction while syncing: a restart keeps every finished group. */
const SAVE_GROUP = 16;

import { CosineScan } from "./scan.ts";

/**
 * One vector per tool (owner "" = global) or skill (owner "", name = the skill's id), tagged with the
 * model and the record it was computed from.
 */
export const semanticMigrations: Migration[] = [
  { id: "semantic/001-tool-vectors", up: vectorTable("semantic_tool_vectors") },
  { id: "semantic/002-skill-vectors", up: vectorTable("semantic_skill_vectors") },
];

/** One store's table: the vector of each record, with the model and the record hash it came from. */
function vectorTable(table: VectorTable): string {
  return `
    CREATE TABLE ${table} (
      owner       TEXT NOT NULL,
      name        TEXT NOT NULL,
      model_id    TEXT NOT NULL,
      record_hash TEXT NOT NULL,
      dims        INTEGER NOT NULL,
      vector      BLOB NOT NULL,
      PRIMARY KEY (owner, name)
    ) WITHOUT ROWID;
  `;
}

/** Where a store's vectors live: one table per kind of record. */
export type VectorTable = "semantic_tool_vectors" | "semantic_skill_vectors";

/** A catalog tool as the vector store sees it. */
export interface ToolText {
  readonly owner: string;
  readonly name: string;
  /** The tool record's hash: a different hash means a different text, so a new vector. */
  readonly hash: string;
  /** What to embed (see toolEmbeddingText). */
  readonly text: string;
}

export interface SyncReport {
  /** Tools whose stored vector was current. */
  readonly reused: number;
  readonly embedded: number;
  readonly removed: number;
  /** True when a newer sync started before this one finished (its work so far is kept). */
  readonly superseded: boolean;
}

/** Every tool that has a vector, and a scan over those vectors in `keys` order. */
export interface PackedVectors {
  readonly keys: readonly ToolKey[];
  readonly scan: CosineScan;
}

interface ToolKey {
  readonly owner: string;
  readonly name: string;
}

interface StoredRow {
  owner: string;
  name: string;
  model_id: string;
  record_hash: string;
  dims: number;
}

/**
 * The vectors of one model for the tools (or skills) of one table, persisted in SQLite and held in
 * memory. `sync` brings them in line with the records in the background: vectors whose model and
 * record hash still match are read back, missing or changed ones are embedded (written in groups, a
 * transaction each, so a restart keeps what was done), removed records lose theirs.
 * Until a record's vector exists, `has` says no and search stays lexical for it.
 */
export class TextVectors {
  private readonly byKey = new Map<string, Float32Array>();
  private packed: PackedVectors | undefined;
  /** When `packed` was made, and whether vectors were added since (see pack). */
  private packedAt = 0;
  private added = false;
  private generation = 0;

  constructor(
    private readonly db: Db,
    private readonly embedder: TextEmbedder,
    private readonly table: VectorTable = "semantic_tool_vectors",
    /** How the texts are made (e.g. TOOL_TEXT_VERSION): stored with the model id, so a new recipe re-embeds. */
    private readonly textVersion = "",
  ) {}

  /** The model and text recipe a stored vector must have been made with to be reused. */
  private get madeWith(): string {
    return this.textVersion === "" ? this.embedder.modelId : `${this.embedder.modelId} ${this.textVersion}`;
  }

  has(owner: string, name: string): boolean {
    return this.byKey.has(keyOf(owner, name));
  }

  vectorOf(owner: string, name: string): Float32Array | undefined {
    return this.byKey.get(keyOf(owner, name));
  }

  get size(): number {
    return this.byKey.size;
  }

  /**
   * The vectors packed for a scan. Rebuilt after a change, but while a sync adds vectors at most once
   * a second: each rebuild copies every vector, and searches during a long sync would otherwise copy
   * them after every group (a vector added meanwhile counts as pending a little longer).
   */
  pack(): PackedVectors {
    const fresh = !this.added || performance.now() - this.packedAt < REPACK_INTERVAL_MS;
    if (this.packed !== undefined && fresh) return this.packed;
    const dims = this.embedder.dims;
    const keys: ToolKey[] = [];
    const vectors = new Float32Array(this.byKey.size * dims);
    for (const [key, vector] of this.byKey) {
      vectors.set(vector, keys.length * dims);
      keys.push(toolKey(key));
    }
    const scan = new CosineScan(vectors, dims);
    // The map then shares the scan's copy instead of keeping a second one.
    keys.forEach((key, i) => {
      this.byKey.set(keyOf(key.owner, key.name), scan.vectors.subarray(i * dims, (i + 1) * dims));
    });
    this.packed = { keys, scan };
    this.packedAt = performance.now();
    this.added = false;
    return this.packed;
  }

  /** Makes the stored and in-memory vectors match `tools`; a newer call supersedes a running one. */
  async sync(tools: readonly ToolText[]): Promise<SyncReport> {
    const generation = ++this.generation;
    const { dims } = this.embedder;
    const modelId = this.madeWith;
    const wanted = new Map(tools.map((t) => [keyOf(t.owner, t.name), t]));
    const stored = this.db
      .prepare<[], StoredRow>(`SELECT owner, name, model_id, record_hash, dims FROM ${this.table}`)
      .all();
    const current = new Set<string>();
    const removed: StoredRow[] = [];
    for (const row of stored) {
      const key = keyOf(row.owner, row.name);
      const tool = wanted.get(key);
      if (tool === undefined) removed.push(row);
      // A different model or dimension makes every old vector meaningless: they are recomputed.
      else if (row.model_id === modelId && row.dims === dims && row.record_hash === tool.hash)
        current.add(key);
    }
    this.forget(removed);
    for (const key of [...this.byKey.keys()]) if (!current.has(key)) this.byKey.delete(key);
    this.loadMissing(current);
    this.packed = undefined;

    const pending = tools.filter((t) => !current.has(keyOf(t.owner, t.name)));
    let embedded = 0;
    for (let start = 0; start < pending.length; start += SAVE_GROUP) {
      const batch = pending.slice(start, start + SAVE_GROUP);
      const vectors = await this.embedder.embedTexts(batch.map((t) => t.text));
      if (generation !== this.generation)
        return { reused: current.size, embedded, removed: removed.length, superseded: true };
      this.save(batch, vectors);
      embedded += batch.length;
    }
    // The sync's last vectors are in the next pack, whenever the last one was made.
    this.packed = undefined;
    return { reused: current.size, embedded, removed: removed.length, superseded: false };
  }

  private forget(rows: readonly StoredRow[]): void {
    const remove = this.db.prepare(`DELETE FROM ${this.table} WHERE owner = ? AND name = ?`);
    this.db.transaction(() => {
      for (const row of rows) remove.run(row.owner, row.name);
    })();
  }

  private loadMissing(current: ReadonlySet<string>): void {
    const read = this.db.prepare<[], { owner: string; name: string; vector: Buffer }>(
      `SELECT owner, name, vector FROM ${this.table}`,
    );
    for (const row of read.iterate()) {
      const key = keyOf(row.owner, row.name);
      if (!current.has(key) || this.byKey.has(key)) continue;
      // Copied out of the row's buffer, whose offset need not be 4-byte aligned.
      this.byKey.set(key, new Float32Array(new Uint8Array(row.vector).buffer));
    }
  }

  private save(tools: readonly ToolText[], vectors: readonly Float32Array[]): void {
    const { dims } = this.embedder;
    const modelId = this.madeWith;
    const upsert = this.db.prepare(
      `INSERT INTO ${this.table} (owner, name, model_id, record_hash, dims, vector)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (owner, name) DO UPDATE SET
         model_id = excluded.model_id, record_hash = excluded.record_hash,
         dims = excluded.dims, vector = excluded.vector`,
    );
    this.db.transaction(() => {
      tools.forEach((tool, i) => {
        const vector = vectors[i];
        if (vector === undefined) throw new Error(`no vector for tool ${tool.name}`);
        upsert.run(
          tool.owner,
          tool.name,
          modelId,
          tool.hash,
          dims,
          Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength),
        );
      });
    })();
    tools.forEach((tool, i) => {
      const vector = vectors[i];
      if (vector !== undefined) this.byKey.set(keyOf(tool.owner, tool.name), vector);
    });
    this.added = true;
  }
}

// NUL cannot occur in an owner or a tool name, so the pair maps to one string and back.
function keyOf(owner: string, name: string): string {
  return `${owner}\u0000${name}`;
}

function toolKey(key: string): ToolKey {
  const at = key.indexOf("\u0000");
  return { owner: key.slice(0, at), name: key.slice(at + 1) };
}
