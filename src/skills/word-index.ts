import type { Db } from "../database/sqlite.ts";
import { LruCache } from "../lru.ts";
import type { VectorDocs } from "../search/evidence.ts";
import { pairs } from "../search/fts.ts";
import type { PatternDocs } from "../search/patterns.ts";
import { Ranker } from "../search/ranker.ts";
import { Candidates, RANKING_DEFAULTS, type RankerConfig } from "../search/ranker-options.ts";
import { analyze, bareName, nameKey } from "../search/text.ts";
import { fold } from "../text/caller-regex.ts";
import type { TaskType } from "./model.ts";

/**
 * The skills' index in the search core (src/search): a skill is a doc of weighted fields, ranked by
 * the same BM25F, request reading, typo repair and synonyms as tools, and a doc of the vector store
 * under its partition and name (VectorDocs), fused with meaning as tools are. It only proposes candidates:
 * every row a caller gets back is still checked by the one visibility predicate in SQL (store.ts),
 * so the index can never widen what a caller sees. Its statistics (N, df) are taken over the
 * caller's partitions only (Candidates), so neither scores nor which words count reveal other
 * tenants' skills.
 */

/**
 * How skills are ranked: the shared settings, and per field (name, title, trigger, description,
 * tags, word pairs of name and description) its weight and length normalisation, set as the tool
 * fields of the same kind are (discovery's TOOL_RANKER), the trigger read like a second description.
 */
const SKILL_RANKER: RankerConfig = {
  ...RANKING_DEFAULTS,
  weights: [2.25, 2, 1, 1, 0.85, 0.5],
  b: [0.9, 0.3, 0.75, 0.75, 0.3, 0.5],
};

/** Rows read, and docs analysed, between two yields of a build. */
const ROWS_PER_STEP = 512;
const DOCS_PER_STEP = 32;

/** Caller views (partitions and task type) whose candidate sets a build keeps, most recent first. */
const VIEWS_KEPT = 256;

/** A scope's partition: also the owner its skills' vectors are stored under (names are unique in it). */
export function partitionKey(kind: string, tenantId: string, projectId: string): string {
  return JSON.stringify([kind, tenantId, projectId]);
}

interface Row {
  seq: number;
  name: string;
  title: string;
  trigger_text: string;
  description: string;
  tags: string;
  scope_kind: string;
  scope_rank: number;
  tenant_id: string;
  project_id: string;
  task_type: TaskType;
}

/** Docs are dense numbers 0..n-1 in seq order, so a caller's view is a mask over typed arrays. */
export class SkillWordIndex implements PatternDocs, VectorDocs {
  private readonly views = new LruCache<string, Candidates>(VIEWS_KEPT);
  /** Partition keys by partition number. */
  private readonly partitionNames: readonly string[];

  private constructor(
    readonly ranker: Ranker,
    readonly keys: ReadonlyMap<string, readonly number[]>,
    readonly tieOrder: Int32Array,
    readonly tieRank: Int32Array,
    /** Per doc: its row's seq, name, partition, task type; its names and texts as regex search reads them. */
    private readonly seqs: Int32Array,
    private readonly names: readonly string[],
    /** Docs by name, the nearest scope first (a project's skill shadows its tenant's, which shadows a global one). */
    private readonly byName: ReadonlyMap<string, readonly number[]>,
    private readonly partitionOf: Int32Array,
    private readonly partitionIds: ReadonlyMap<string, number>,
    private readonly taskTypes: readonly TaskType[],
    readonly foldedNames: readonly string[],
    readonly bareNames: readonly string[],
    /** Title, trigger, description and each tag, folded (RE2 runs on these: it ignores case anyway). */
    readonly foldedTexts: readonly (readonly string[])[],
  ) {
    this.partitionNames = [...partitionIds.keys()];
  }

  /**
   * Builds the index of every skill in the database (all partitions; a view masks them), yielding
   * between small groups of rows and docs so the library can run it in slices between other calls.
   */
  static *steps(db: Db): Generator<void, SkillWordIndex> {
    const page = db.prepare<[number], Row>(
      `SELECT seq, name, title, trigger_text, description, tags, scope_kind, scope_rank, tenant_id, project_id,
              task_type FROM skills WHERE seq > ? ORDER BY seq LIMIT ${ROWS_PER_STEP}`,
    );
    const rows: Row[] = [];
    for (let read = page.all(0); read.length > 0; read = page.all((read.at(-1) as Row).seq)) {
      rows.push(...read);
      yield;
    }
    const partitionIds = new Map<string, number>([[partitionKey("global", "", ""), 0]]);
    const partitionOf = new Int32Array(rows.length);
    const keys = new Map<string, number[]>();
    const addKey = (key: string, doc: number) => {
      const list = keys.get(key);
      if (!list) keys.set(key, [doc]);
      else if (list.at(-1) !== doc) list.push(doc);
    };
    const fields: string[][][] = [];
    const foldedNames: string[] = [];
    const bareNames: string[] = [];
    const foldedTexts: string[][] = [];
    for (const [doc, row] of rows.entries()) {
      if (doc % DOCS_PER_STEP === 0) yield;
      const tagList = JSON.parse(row.tags) as string[];
      const tags = tagList.join(" ");
      const name = analyze(row.name);
      const description = analyze(row.description);
      fields.push([
        name,
        analyze(row.title),
        analyze(row.trigger_text),
        description,
        analyze(tags),
        [...pairs(name), ...pairs(description)],
      ]);
      const key = partitionKey(row.scope_kind, row.tenant_id, row.project_id);
      let partition = partitionIds.get(key);
      if (partition === undefined) {
        partition = partitionIds.size;
        partitionIds.set(key, partition);
      }
      partitionOf[doc] = partition;
      addKey(nameKey(row.name), doc);
      addKey(nameKey(bareName(row.name)), doc);
      foldedNames.push(fold(row.name));
      bareNames.push(bareName(row.name));
      foldedTexts.push([row.title, row.trigger_text, row.description, ...tagList].map(fold));
    }
    yield;
    // Ties: the shorter name, then the name (as exact search orders its rows).
    const order = Int32Array.from(rows, (_, doc) => doc);
    order.sort((a, b) => {
      const x = (rows[a] as Row).name;
      const y = (rows[b] as Row).name;
      return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
    });
    const tieRank = new Int32Array(rows.length);
    order.forEach((doc, position) => {
      tieRank[doc] = position;
    });
    yield;
    const ranker = yield* Ranker.steps(fields, tieRank, SKILL_RANKER, partitionOf);
    const byName = new Map<string, number[]>();
    for (let doc = 0; doc < rows.length; doc++) {
      const name = (rows[doc] as Row).name;
      const list = byName.get(name);
      if (list) list.push(doc);
      else byName.set(name, [doc]);
    }
    for (const list of byName.values())
      if (list.length > 1) list.sort((a, b) => (rows[b] as Row).scope_rank - (rows[a] as Row).scope_rank);
    return new SkillWordIndex(
      ranker,
      keys,
      order,
      tieRank,
      Int32Array.from(rows, (row) => row.seq),
      rows.map((row) => row.name),
      byName,
      partitionOf,
      partitionIds,
      rows.map((row) => row.task_type),
      foldedNames,
      bareNames,
      foldedTexts,
    );
  }

  /** The row seq of a doc. */
  seqOf(doc: number): number {
    return this.seqs[doc] as number;
  }

  get docCount(): number {
    return this.seqs.length;
  }

  ownerOf(doc: number): string {
    return this.partitionNames[this.partitionOf[doc] as number] ?? "";
  }

  nameOf(doc: number): string {
    return this.names[doc] ?? "";
  }

  docsNamed(name: string): readonly number[] {
    return this.byName.get(name) ?? [];
  }

  textsOf(doc: number): readonly string[] {
    return this.foldedTexts[doc] ?? [];
  }

  /**
   * The docs a caller with these partitions (keys from partitionKey) may be shown, of `taskType` when
   * given, with their corpus statistics: kept per view, so each df is counted once per build.
   */
  candidates(partitions: ReadonlySet<string>, taskType: TaskType | undefined): Candidates {
    const key = `${[...partitions].sort().join("\u0001")}\u0002${taskType ?? ""}`;
    let candidates = this.views.get(key);
    if (!candidates) {
      const allowed = this.allowedPartitions(partitions);
      const mask = new Uint8Array(this.seqs.length);
      for (let doc = 0; doc < mask.length; doc++)
        if (allowed[this.partitionOf[doc] as number] === 1 && (!taskType || this.taskTypes[doc] === taskType))
          mask[doc] = 1;
      candidates = new Candidates(mask);
      this.views.set(key, candidates);
    }
    return candidates;
  }

  private allowedPartitions(partitions: ReadonlySet<string>): Uint8Array {
    const allowed = new Uint8Array(this.partitionIds.size);
    for (const key of partitions) {
      const id = this.partitionIds.get(key);
      if (id !== undefined) allowed[id] = 1;
    }
    return allowed;
  }
}
