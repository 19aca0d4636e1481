import type { Db } from "../database/sqlite.ts";
import { type CallerRegex, fold, mayMatch } from "../text/caller-regex.ts";
import { gallop } from "../text/postings.ts";
import type { TaskType } from "./model.ts";

/**
 * In-memory BM25F index over a skill's name, title, trigger, description and tags: the skill search.
 * SQLite FTS5 needs 5–30 ms for a term that matches thousands of skills; this index answers in well
 * under a millisecond. It only proposes candidates: every row a caller gets back is still checked by
 * the one visibility predicate in SQL (store.ts), so the index can never widen what a caller sees.
 * Its statistics (skill count N, document frequency per term, average length) are taken over the
 * caller's partitions only, so neither scores nor which terms count reveal other tenants' skills.
 */

const FIELD_WEIGHTS = { name: 6, title: 3, trigger: 3, description: 1, tags: 2 } as const;
const K1 = 1.2;
const B = 0.75;

export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export function partitionKey(kind: string, tenantId: string, projectId: string): string {
  return `${kind}\u0000${tenantId}\u0000${projectId}`;
}

export interface IndexHit {
  readonly seq: number;
  readonly name: string;
  readonly relevance: number;
}

interface Row {
  seq: number;
  name: string;
  title: string;
  trigger_text: string;
  description: string;
  tags: string;
  scope_kind: string;
  tenant_id: string;
  project_id: string;
  task_type: TaskType;
}

interface Postings {
  docs: Int32Array;
  tfs: Float32Array;
  /** The partitions the term's docs are in, and how many of its docs each holds: df by view, without a scan. */
  partitions: Int32Array;
  partitionDocs: Int32Array;
}

/**
 * Postings an OR or prefix search scores at most (~20 ns each): a task of common words over a large
 * catalog would otherwise score every skill once per word. The commonest words, which add the least
 * relevance, are the ones left out.
 */
const MAX_SCORED_POSTINGS = 250_000;

/** What one caller's search sees: its docs, their count and each term's frequency among them. */
interface View {
  readonly accept: (doc: number) => boolean;
  /** 1 for each partition id the view holds. */
  readonly allowed: Uint8Array;
  readonly n: number;
  /** Average skill length over the view's docs (BM25's length normalisation). */
  readonly averageLength: number;
  readonly df: Map<Postings, number>;
}

/** Docs are dense indexes 0..n-1 so scoring runs over typed arrays, not maps. */
export class MemoryIndex {
  private seqs: number[] = [];
  private names: string[] = [];
  /** Lower-cased (RE2-folded) name and text, for the regex literal pre-check without SQLite. */
  private foldedNames: string[] = [];
  private foldedTexts: string[] = [];
  private partitionOf: Int32Array = new Int32Array(0);
  /** Docs per partition id, and the sum of their lengths. */
  private partitionSizes: Int32Array = new Int32Array(0);
  private partitionLengths: Float64Array = new Float64Array(0);
  private taskTypes: TaskType[] = [];
  /** K1 * (1 - B + B * length / avgLength), precomputed per doc. */
  /** Weighted length per doc; normalised per search by the view's average (a caller's own skills). */
  private lengths: Float64Array = new Float64Array(0);
  private readonly partitionIds = new Map<string, number>();
  private postings = new Map<string, Postings>();
  private sortedTerms: string[] = [];
  /** Scratch buffers sized to the doc count: the OR accumulator (all zeros between calls) and the
   * candidate list, so a search allocates nothing per candidate. */
  private scores: Float64Array = new Float64Array(0);
  private candidateDocs: Int32Array = new Int32Array(0);
  private candidateScores: Float64Array = new Float64Array(0);

  static build(db: Db): MemoryIndex {
    const index = new MemoryIndex();
    const lengths: number[] = [];
    const building = new Map<string, { docs: number[]; tfs: number[] }>();
    const partitions: number[] = [];
    const statement = db.prepare<[], Row>(
      "SELECT seq, name, title, trigger_text, description, tags, scope_kind, tenant_id, project_id, task_type FROM skills",
    );
    for (const row of statement.iterate()) {
      const doc = index.seqs.length;
      const tf = new Map<string, number>();
      let length = 0;
      const add = (text: string, weight: number) => {
        for (const term of tokenize(text)) {
          tf.set(term, (tf.get(term) ?? 0) + weight);
          length += weight;
        }
      };
      add(row.name, FIELD_WEIGHTS.name);
      add(row.title, FIELD_WEIGHTS.title);
      add(row.trigger_text, FIELD_WEIGHTS.trigger);
      add(row.description, FIELD_WEIGHTS.description);
      add((JSON.parse(row.tags) as string[]).join(" "), FIELD_WEIGHTS.tags);
      index.seqs.push(row.seq);
      index.names.push(row.name);
      index.foldedNames.push(fold(row.name));
      index.foldedTexts.push(
        fold(
          `${row.title}\n${row.trigger_text}\n${row.description}\n${(JSON.parse(row.tags) as string[]).join(" ")}`,
        ),
      );
      index.taskTypes.push(row.task_type);
      const key = partitionKey(row.scope_kind, row.tenant_id, row.project_id);
      let partition = index.partitionIds.get(key);
      if (partition === undefined) {
        partition = index.partitionIds.size;
        index.partitionIds.set(key, partition);
      }
      partitions.push(partition);
      lengths.push(length);
      for (const [term, count] of tf) {
        let list = building.get(term);
        if (!list) {
          list = { docs: [], tfs: [] };
          building.set(term, list);
        }
        list.docs.push(doc);
        list.tfs.push(count);
      }
    }
    const n = index.seqs.length;
    index.lengths = Float64Array.from(lengths);
    index.partitionOf = Int32Array.from(partitions);
    index.partitionSizes = new Int32Array(index.partitionIds.size);
    index.partitionLengths = new Float64Array(index.partitionIds.size);
    partitions.forEach((partition, doc) => {
      index.partitionSizes[partition] = (index.partitionSizes[partition] ?? 0) + 1;
      index.partitionLengths[partition] = (index.partitionLengths[partition] ?? 0) + (lengths[doc] ?? 0);
    });
    for (const [term, list] of building)
      index.postings.set(term, {
        docs: Int32Array.from(list.docs),
        tfs: Float32Array.from(list.tfs),
        ...partitionCounts(list.docs, index.partitionOf),
      });
    index.sortedTerms = [...index.postings.keys()].sort();
    index.scores = new Float64Array(n);
    index.candidateDocs = new Int32Array(n);
    index.candidateScores = new Float64Array(n);
    return index;
  }

  /**
   * Seqs of the docs in `partitions` whose name or text may match `regex` (the literal pre-check;
   * RE2 itself runs later on far fewer rows), or what is too much when more than `max.rows` docs, or
   * more than `max.text` characters of their names and texts, would need RE2: the caller then
   * refuses the pattern before any RE2 runs, instead of stalling the event loop on a full scan.
   */
  regexCandidates(
    regex: CallerRegex,
    partitions: ReadonlySet<string>,
    taskType: TaskType | undefined,
    max: { readonly rows: number; readonly text: number },
  ): number[] | "rows" | "text" {
    const allowed = this.allowedPartitions(partitions);
    const seqs: number[] = [];
    let text = 0;
    for (let doc = 0; doc < this.seqs.length; doc++) {
      if (allowed[this.partitionOf[doc] as number] !== 1) continue;
      if (taskType && this.taskTypes[doc] !== taskType) continue;
      const name = this.foldedNames[doc] as string;
      const body = this.foldedTexts[doc] as string;
      if (!mayMatch(regex, name) && !mayMatch(regex, body)) continue;
      if (seqs.length === max.rows) return "rows";
      // What the scan may run RE2 on: the name, the text, and the text as the caller sees it.
      text += name.length + 2 * body.length;
      if (text > max.text) return "text";
      seqs.push(this.seqs[doc] as number);
    }
    return seqs;
  }

  private allowedPartitions(partitions: ReadonlySet<string>): Uint8Array {
    const allowed = new Uint8Array(this.partitionIds.size);
    for (const key of partitions) {
      const id = this.partitionIds.get(key);
      if (id !== undefined) allowed[id] = 1;
    }
    return allowed;
  }

  /** Index terms the view's docs have starting with `prefix` (typo tolerance: a shortened word as a prefix). */
  private expand(prefix: string, view: View): string[] {
    let lo = 0;
    let hi = this.sortedTerms.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.sortedTerms[mid] ?? "") < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    // At most 64 completions, from at most 4,096 terms read (a short prefix has many).
    for (let i = lo; i < this.sortedTerms.length && i < lo + 4096 && out.length < 64; i++) {
      const term = this.sortedTerms[i] ?? "";
      if (!term.startsWith(prefix)) break;
      const list = this.postings.get(term);
      if (list && this.df(list, view) > 0) out.push(term);
    }
    return out;
  }

  /**
   * The best `k` candidates by BM25F relevance (higher = better), then shorter name, then name. `and`
   * needs every term; `or` any; `prefix` treats each term as a prefix. Only docs in `partitions`
   * (keys from partitionKey) count.
   */
  search(
    terms: readonly string[],
    mode: "and" | "or" | "prefix",
    partitions: ReadonlySet<string>,
    taskType: TaskType | undefined,
    k: number,
  ): IndexHit[] {
    const view = this.view(partitions);
    const accept = (doc: number) => view.accept(doc) && (!taskType || this.taskTypes[doc] === taskType);
    const visible = (list: Postings | undefined): list is Postings =>
      list !== undefined && this.df(list, view) > 0;
    // One term: "or" is "and", and the intersection path scores only that term's postings.
    if (mode === "and" || (mode === "or" && terms.length === 1)) {
      const lists = terms.map((term) => this.postings.get(term));
      if (!lists.every(visible)) return [];
      return this.topK(this.intersect(lists, accept, view), k);
    }
    let groups = (mode === "prefix" ? terms.map((t) => this.expand(t, view)) : terms.map((t) => [t])).map(
      (group) => group.map((term) => this.postings.get(term)).filter(visible),
    );
    const { n } = view;
    const docFrequency = (group: Postings[]) => group.reduce((sum, list) => sum + this.df(list, view), 0);
    if (groups.length > 1 && n >= 1000) {
      // Dynamic stop words: in an OR query, terms in over a quarter of all skills add little relevance
      // (idf < ln 4) but dominate the cost; drop them when a rarer term is present. Small catalogs are
      // cheap to score fully, so they keep every term.
      const rare = groups.filter((group) => group.length > 0 && docFrequency(group) <= n / 4);
      if (rare.length > 0) groups = rare;
    }
    const { scores, candidateDocs } = this;
    let count = 0;
    for (const list of withinScoringBudget(groups.flat())) {
      const idf = this.idf(list, view);
      for (let i = 0; i < list.docs.length; i++) {
        const doc = list.docs[i] as number;
        if (!accept(doc)) continue;
        if (scores[doc] === 0) candidateDocs[count++] = doc;
        scores[doc] = (scores[doc] as number) + this.bm25(list, i, doc, idf, view);
      }
    }
    for (let i = 0; i < count; i++) {
      const doc = candidateDocs[i] as number;
      this.candidateScores[i] = scores[doc] as number;
      scores[doc] = 0;
    }
    return this.topK(count, k);
  }

  /**
   * The most relevance a skill can have for the terms (each fully saturated, idf × (K1 + 1)): the
   * unit of the absolute score (relevance / scale). One occurrence of every term in a skill of
   * average length scores about 0.45. A term no skill has counts at the idf of an unseen term, so
   * words nothing matches lower every score; with `prefix`, a term counts at its rarest completion.
   */
  scale(terms: readonly string[], mode: "and" | "or" | "prefix", partitions: ReadonlySet<string>): number {
    const view = this.view(partitions);
    const unseen = Math.log(1 + (view.n + 0.5) / 0.5);
    let scale = 0;
    for (const term of terms) {
      const lists = (mode === "prefix" ? this.expand(term, view) : [term]).flatMap((t) => {
        const list = this.postings.get(t);
        return list && this.df(list, view) > 0 ? [list] : [];
      });
      scale += lists.length === 0 ? unseen : Math.max(...lists.map((list) => this.idf(list, view)));
    }
    return scale * (K1 + 1);
  }

  /** The caller's docs (those in `partitions`) and their count; term frequencies are counted on use. */
  private view(partitions: ReadonlySet<string>): View {
    const allowed = this.allowedPartitions(partitions);
    let n = 0;
    let totalLength = 0;
    for (let id = 0; id < allowed.length; id++) {
      if (allowed[id] !== 1) continue;
      n += this.partitionSizes[id] ?? 0;
      totalLength += this.partitionLengths[id] ?? 0;
    }
    return {
      accept: (doc) => allowed[this.partitionOf[doc] as number] === 1,
      allowed,
      n,
      averageLength: n > 0 ? totalLength / n : 1,
      df: new Map(),
    };
  }

  /** How many of the view's docs have the term: a sum over the term's partitions (remembered per view). */
  private df(list: Postings, view: View): number {
    let df = view.df.get(list);
    if (df === undefined) {
      df = 0;
      for (let i = 0; i < list.partitions.length; i++)
        if (view.allowed[list.partitions[i] as number] === 1) df += list.partitionDocs[i] as number;
      view.df.set(list, df);
    }
    return df;
  }

  private idf(list: Postings, view: View): number {
    const df = this.df(list, view);
    return Math.log(1 + (view.n - df + 0.5) / (df + 0.5));
  }

  private bm25(list: Postings, i: number, doc: number, idf: number, view: View): number {
    const tf = list.tfs[i] as number;
    const norm = K1 * (1 - B + (B * (this.lengths[doc] as number)) / view.averageLength);
    return (idf * tf * (K1 + 1)) / (tf + norm);
  }

  /**
   * Leaves the docs found in every list in the candidate buffers, with their summed BM25F relevance,
   * and returns their count. Starts from the rarest list and looks each surviving doc up in the next
   * one by galloping (postings are sorted by doc), so the cost follows the rarest term.
   */
  private intersect(lists: Postings[], accept: (doc: number) => boolean, view: View): number {
    const [rarest, ...rest] = [...lists].sort((a, b) => a.docs.length - b.docs.length);
    if (!rarest) return 0;
    const { candidateDocs, candidateScores } = this;
    let count = 0;
    const rarestIdf = this.idf(rarest, view);
    for (let i = 0; i < rarest.docs.length; i++) {
      const doc = rarest.docs[i] as number;
      if (!accept(doc)) continue;
      candidateDocs[count] = doc;
      candidateScores[count++] = this.bm25(rarest, i, doc, rarestIdf, view);
    }
    for (const list of rest) {
      const idf = this.idf(list, view);
      let kept = 0;
      let from = 0;
      for (let c = 0; c < count; c++) {
        const doc = candidateDocs[c] as number;
        const at = gallop(list.docs, doc, from);
        if (at === list.docs.length) break;
        from = at;
        if (list.docs[at] !== doc) continue;
        candidateDocs[kept] = doc;
        candidateScores[kept++] = (candidateScores[c] as number) + this.bm25(list, at, doc, idf, view);
      }
      count = kept;
    }
    return count;
  }

  /**
   * The best `k` of the first `count` candidates: relevance, then shorter name, then name. Bounded
   * insertion on doc indexes; most candidates are rejected by one comparison with the k-th best.
   */
  private topK(count: number, k: number): IndexHit[] {
    const top: number[] = [];
    const relevance: number[] = [];
    for (let c = 0; c < count; c++) {
      const doc = this.candidateDocs[c] as number;
      const score = this.candidateScores[c] as number;
      if (top.length >= k && score < (relevance[k - 1] as number)) continue;
      let i = top.length;
      while (i > 0 && this.ranksBefore(doc, score, top[i - 1] as number, relevance[i - 1] as number)) i--;
      if (i >= k) continue;
      top.splice(i, 0, doc);
      relevance.splice(i, 0, score);
      if (top.length > k) {
        top.pop();
        relevance.pop();
      }
    }
    return top.map((doc, i) => ({
      seq: this.seqs[doc] as number,
      name: this.names[doc] as string,
      relevance: relevance[i] as number,
    }));
  }

  /** Higher relevance first, then the shorter name, then the name. */
  private ranksBefore(doc: number, score: number, other: number, otherScore: number): boolean {
    if (score !== otherScore) return score > otherScore;
    const name = this.names[doc] as string;
    const otherName = this.names[other] as string;
    return name.length !== otherName.length ? name.length < otherName.length : name < otherName;
  }
}

/** A term's partitions (ascending) and how many of its docs each holds. */
function partitionCounts(
  docs: readonly number[],
  partitionOf: Int32Array,
): { partitions: Int32Array; partitionDocs: Int32Array } {
  const counts = new Map<number, number>();
  for (const doc of docs) {
    const partition = partitionOf[doc] as number;
    counts.set(partition, (counts.get(partition) ?? 0) + 1);
  }
  const partitions = [...counts.keys()].sort((a, b) => a - b);
  return {
    partitions: Int32Array.from(partitions),
    partitionDocs: Int32Array.from(partitions.map((partition) => counts.get(partition) ?? 0)),
  };
}

/**
 * The lists to score within MAX_SCORED_POSTINGS, shortest (rarest, most telling) first; the
 * shortest is always scored, whatever its length.
 */
function withinScoringBudget(lists: readonly Postings[]): Postings[] {
  const total = lists.reduce((sum, list) => sum + list.docs.length, 0);
  if (total <= MAX_SCORED_POSTINGS) return [...lists];
  const kept: Postings[] = [];
  let scored = 0;
  for (const list of [...lists].sort((a, b) => a.docs.length - b.docs.length)) {
    if (kept.length > 0 && scored + list.docs.length > MAX_SCORED_POSTINGS) break;
    kept.push(list);
    scored += list.docs.length;
  }
  return kept;
}
