import { setImmediate as turn } from "node:timers/promises";
import type { Db, Migration } from "../database/sqlite.ts";
import type { TextEmbedder } from "./embedder.ts";
import { VectorSlab } from "./vector-slab.ts";

/** Texts handed to the embedder at once while syncing; two such groups are in flight at a time. */
const EMBED_GROUP = 64;
/** Stored rows read (or deleted) per statement, with a turn of the event loop between statements. */
const READ_CHUNK = 2_000;

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

/** A catalog tool (or skill) as the vector store sees it. */
export interface ToolText {
  readonly owner: string;
  readonly name: string;
  /** The record's hash: a different hash means a different text, so a new vector. */
  readonly hash: string;
  /** What to embed (see toolEmbeddingText); asked only of records whose vector must be computed. */
  readonly text: () => string;
}

export interface SyncReport {
  /** Tools whose stored vector was current. */
  readonly reused: number;
  readonly embedded: number;
  readonly removed: number;
  /** True when a newer sync started before this one finished (its work so far is kept). */
  readonly superseded: boolean;
}

/**
 * A change to which record holds which slot, in the order made: `slot` -1 = the record lost its vector.
 * Readers that map their own documents to slots (SemanticSearch) replay the changes since they
 * last looked instead of mapping every document again.
 */
export interface SlotChange {
  readonly owner: string;
  readonly name: string;
  readonly slot: number;
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
 * memory in a VectorSlab. `sync` brings them in line with the records in the background: vectors whose
 * model and record hash still match are read back, missing or changed ones are embedded (written in
 * groups, a transaction each, so a restart keeps what was done), removed records lose theirs. Reading
 * and embedding go in chunks with turns of the event loop between them, so no sync holds the loop.
 * Until a record's vector exists, `slotOf` says none and search stays lexical for it.
 */
export class TextVectors {
  readonly slab: VectorSlab;
  /** By owner, then name: the record's slot in the slab (two levels, so a lookup builds no string). */
  private readonly slots = new Map<string, Map<string, number>>();
  private count = 0;
  /** Slot changes since `changesFrom` (see changesSince); cleared when long, which bumps `epoch`. */
  private changes: SlotChange[] = [];
  private epochCount = 0;
  private generation = 0;

  constructor(
    private readonly db: Db,
    private readonly embedder: TextEmbedder,
    private readonly table: VectorTable = "semantic_tool_vectors",
    /** How the texts are made (e.g. TOOL_TEXT_VERSION): stored with the model id, so a new recipe re-embeds. */
    private readonly textVersion = "",
  ) {
    this.slab = new VectorSlab(embedder.dims);
  }

  /** The model and text recipe a stored vector must have been made with to be reused. */
  private get madeWith(): string {
    return this.textVersion === "" ? this.embedder.modelId : `${this.embedder.modelId} ${this.textVersion}`;
  }

  slotOf(owner: string, name: string): number | undefined {
    return this.slots.get(owner)?.get(name);
  }

  has(owner: string, name: string): boolean {
    return this.slotOf(owner, name) !== undefined;
  }

  get size(): number {
    return this.count;
  }

  /** Bumped whenever the change log is cleared: a reader of an older epoch maps everything again. */
  get epoch(): number {
    return this.epochCount;
  }

  /** The position in the current epoch's change log that the next change will take. */
  get changeMark(): number {
    return this.changes.length;
  }

  /** The slot changes from position `from` of the current epoch on, and the position after them. */
  changesSince(from: number): { readonly changes: readonly SlotChange[]; readonly next: number } {
    return { changes: this.changes.slice(from), next: this.changes.length };
  }

  /** Every record that has a vector, with its slot. */
  *entries(): Generator<SlotChange> {
    for (const [owner, byName] of this.slots) for (const [name, slot] of byName) yield { owner, name, slot };
  }

  /** Makes the stored and in-memory vectors match `records`; a newer call supersedes a running one. */
  async sync(records: readonly ToolText[]): Promise<SyncReport> {
    const generation = ++this.generation;
    const superseded = () => generation !== this.generation;
    const { dims } = this.embedder;
    const modelId = this.madeWith;
    const wanted = new Map<string, Map<string, ToolText>>();
    for (const r of records) inner(wanted, r.owner).set(r.name, r);
    const current: StoredRow[] = [];
    const removed: StoredRow[] = [];
    for await (const row of this.storedRows()) {
      const record = wanted.get(row.owner)?.get(row.name);
      if (record === undefined) removed.push(row);
      // A different model or dimension makes every old vector meaningless: they are recomputed.
      else if (row.model_id === modelId && row.dims === dims && row.record_hash === record.hash)
        current.push(row);
      if (superseded()) return { reused: 0, embedded: 0, removed: 0, superseded: true };
    }
    await this.forget(removed);
    const isCurrent = new Map<string, Map<string, StoredRow>>();
    for (const row of current) inner(isCurrent, row.owner).set(row.name, row);
    for (const { owner, name } of [...this.entries()])
      if (!isCurrent.get(owner)?.has(name)) this.drop(owner, name);
    await this.loadMissing(current, superseded);
    if (superseded())
      return { reused: current.length, embedded: 0, removed: removed.length, superseded: true };

    const pending = await this.textsOf(records.filter((r) => !isCurrent.get(r.owner)?.has(r.name)));
    if (superseded())
      return { reused: current.length, embedded: 0, removed: removed.length, superseded: true };
    // One inference per distinct text (tenants that register the same tools share it), similar
    // lengths side by side, so the embedder's batches carry little padding.
    const byText = new Map<string, ToolText[]>();
    for (const { record, text } of pending) {
      const same = byText.get(text);
      if (same) same.push(record);
      else byText.set(text, [record]);
    }
    const texts = byLength(byText.keys());
    const groups: string[][] = [];
    for (let start = 0; start < texts.length; start += EMBED_GROUP)
      groups.push(texts.slice(start, start + EMBED_GROUP));
    let embedded = 0;
    // Two groups in flight keep the embedder busy while a finished group is written.
    let next = groups[0] && this.embedder.embedTexts(groups[0]);
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g] as string[];
      const vectors = await (next as Promise<Float32Array[]>);
      const following = groups[g + 1];
      next = following && !superseded() ? this.embedder.embedTexts(following) : undefined;
      if (superseded()) {
        // Wanted by nobody now, but a rejection must not go unhandled.
        next?.catch(() => {});
        return { reused: current.length, embedded, removed: removed.length, superseded: true };
      }
      const saved = group.flatMap((text, i) =>
        (byText.get(text) ?? []).map((record) => ({ record, vector: vectors[i] as Float32Array })),
      );
      this.save(saved);
      embedded += saved.length;
    }
    return { reused: current.length, embedded, removed: removed.length, superseded: false };
  }

  /** The texts of `records`, made a chunk at a time with a turn of the event loop between chunks. */
  private async textsOf(
    records: readonly ToolText[],
  ): Promise<{ readonly record: ToolText; readonly text: string }[]> {
    const out: { record: ToolText; text: string }[] = [];
    for (let start = 0; start < records.length; start += READ_CHUNK) {
      for (const record of records.slice(start, start + READ_CHUNK))
        out.push({ record, text: record.text() });
      if (start + READ_CHUNK < records.length) await turn();
    }
    return out;
  }

  /** The stored rows' keys and tags, a chunk per statement (keyset order), a turn between chunks. */
  private async *storedRows(): AsyncGenerator<StoredRow> {
    const first = this.db.prepare<[], StoredRow>(
      `SELECT owner, name, model_id, record_hash, dims FROM ${this.table} ORDER BY owner, name LIMIT ${READ_CHUNK}`,
    );
    const after = this.db.prepare<[string, string], StoredRow>(
      `SELECT owner, name, model_id, record_hash, dims FROM ${this.table}
       WHERE (owner, name) > (?, ?) ORDER BY owner, name LIMIT ${READ_CHUNK}`,
    );
    let rows = first.all();
    while (rows.length > 0) {
      yield* rows;
      const last = rows[rows.length - 1] as StoredRow;
      if (rows.length < READ_CHUNK) return;
      await turn();
      rows = after.all(last.owner, last.name);
    }
  }

  private async forget(rows: readonly StoredRow[]): Promise<void> {
    const remove = this.db.prepare(`DELETE FROM ${this.table} WHERE owner = ? AND name = ?`);
    for (let start = 0; start < rows.length; start += READ_CHUNK) {
      this.db.transaction(() => {
        for (const row of rows.slice(start, start + READ_CHUNK)) remove.run(row.owner, row.name);
      })();
      await turn();
    }
  }

  /** Reads back the stored vectors of `current` rows that are not in memory yet, a chunk at a time. */
  private async loadMissing(current: readonly StoredRow[], superseded: () => boolean): Promise<void> {
    const missing = current.filter((row) => !this.has(row.owner, row.name));
    const read = this.db.prepare<[string, string], { vector: Buffer }>(
      `SELECT vector FROM ${this.table} WHERE owner = ? AND name = ?`,
    );
    for (let start = 0; start < missing.length; start += READ_CHUNK) {
      for (const row of missing.slice(start, start + READ_CHUNK)) {
        const stored = read.get(row.owner, row.name);
        // Copied out of the row's buffer, whose offset need not be 4-byte aligned.
        if (stored) this.put(row.owner, row.name, new Float32Array(new Uint8Array(stored.vector).buffer));
      }
      await turn();
      if (superseded()) return;
    }
  }

  private save(saved: readonly { readonly record: ToolText; readonly vector: Float32Array }[]): void {
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
      for (const { record, vector } of saved)
        upsert.run(
          record.owner,
          record.name,
          modelId,
          record.hash,
          dims,
          Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength),
        );
    })();
    for (const { record, vector } of saved) this.put(record.owner, record.name, vector);
  }

  private put(owner: string, name: string, vector: Float32Array): void {
    const known = this.slotOf(owner, name);
    if (known !== undefined) {
      this.slab.replace(known, vector);
      return;
    }
    const slot = this.slab.add(vector);
    inner(this.slots, owner).set(name, slot);
    this.count++;
    this.logChange({ owner, name, slot });
  }

  private drop(owner: string, name: string): void {
    const byName = this.slots.get(owner);
    const slot = byName?.get(name);
    if (byName === undefined || slot === undefined) return;
    byName.delete(name);
    if (byName.size === 0) this.slots.delete(owner);
    this.slab.remove(slot);
    this.count--;
    this.logChange({ owner, name, slot: -1 });
  }

  private logChange(change: SlotChange): void {
    // Past a catalog's worth of changes, mapping everything again is as cheap as replaying them.
    if (this.changes.length >= Math.max(1_024, this.count)) {
      this.changes = [];
      this.epochCount++;
    }
    this.changes.push(change);
  }
}

/** `texts`, shortest first, in one pass per text (a sort of a large catalog would hold the loop). */
function byLength(texts: Iterable<string>): string[] {
  const byLength: string[][] = [];
  for (const text of texts) {
    const same = byLength[text.length];
    if (same) same.push(text);
    else byLength[text.length] = [text];
  }
  return byLength.flatMap((same) => same ?? []);
}

function inner<V>(outer: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let map = outer.get(key);
  if (map === undefined) {
    map = new Map();
    outer.set(key, map);
  }
  return map;
}
