/**
 * The build of what the BM25F ranker reads (ranker.ts): vocabulary, per-term postings with saturated
 * BM25F weights, the forward index for pseudo-relevance feedback and the buckets fuzzy expansion
 * looks in. A generator yielding between small groups of docs and terms, so the catalog can run it in
 * slices between other calls (about a second of work at 10,000 tools).
 */

/** The BM25F parameters the postings are weighted with (see RankerConfig). */
export interface PostingWeights {
  readonly k1: number;
  /**
   * Per field, in the order of each doc's fields: the catalog decides its fields (a field's terms
   * holding a space are word pairs, a proximity signal, never read as a spelling of a query word).
   */
  readonly weights: readonly number[];
  readonly b: readonly number[];
}

/**
 * Every term's postings, one after another in two shared buffers: term t's are at
 * `start[t] .. start[t + 1]`, doc ids ascending. No object per term: tens of thousands of small typed
 * arrays (or views) would cost more in object overhead than the postings themselves.
 */
export interface Postings {
  readonly start: Int32Array;
  readonly docs: Int32Array;
  /** BM25F saturated term weight per posting: tfw (k1 + 1) / (k1 + tfw), tfw = Σ field weight · tf · norm. */
  readonly sat: Float32Array;
}

/** What a ranker reads: the vocabulary, postings, forward index and fuzzy-expansion buckets. */
export interface PostingIndex {
  readonly vocab: ReadonlyMap<string, number>;
  readonly terms: readonly string[];
  readonly postings: Postings;
  readonly fwdStart: Int32Array;
  readonly fwdTerm: Int32Array;
  readonly fwdSat: Float32Array;
  readonly firstChar: ReadonlyMap<string, Int32Array>;
}

/** Docs (or terms) handled between two yields of the build: a few microseconds of work each. */
const DOCS_PER_STEP = 16;
const TERMS_PER_STEP = 1024;

/**
 * `owners[d]` is doc d's owner partition: 0 for the global (operator's) tools, k > 0 for one tenant's
 * own tools (default: every doc global). A doc's field lengths are normalised against the average
 * over the tools its owner's callers see — the global ones, plus its tenant's own — so no tenant's
 * tools shift the scores of tools another tenant sees (the same rule as N and df, see ranker.ts).
 */
export function* buildPostingIndex(
  docs: readonly (readonly string[][])[],
  config: PostingWeights,
  owners?: Int32Array,
): Generator<void, PostingIndex> {
  const vocab = new Map<string, number>();
  const terms: string[] = [];
  const n = docs.length;
  const fieldCount = config.weights.length;
  const lengths = new Float32Array(n * fieldCount);
  // Pass 1: every word's term id, in doc and field order, plus field lengths and document
  // frequencies; typed buffers instead of per-term arrays (the build runs over every tool).
  let wordCount = 0;
  for (const fields of docs) for (let f = 0; f < fieldCount; f++) wordCount += fields[f]?.length ?? 0;
  const ids = new Int32Array(wordCount);
  const partitionCount = owners ? owners.reduce((most, p) => Math.max(most, p), 0) + 1 : 1;
  // Per owner partition: field length totals (one per field per partition) and doc counts.
  const totals = new Float64Array(partitionCount * fieldCount);
  const partitionDocs = new Float64Array(partitionCount);
  const df: number[] = [];
  // The doc a term was last seen in: counts df once per doc here, and collects a doc's distinct
  // terms in pass 2.
  const lastDoc: number[] = [];
  let next = 0;
  for (let d = 0; d < n; d++) {
    if (d % DOCS_PER_STEP === 0) yield;
    const fields = docs[d] ?? [];
    const partition = owners?.[d] ?? 0;
    partitionDocs[partition] = (partitionDocs[partition] ?? 0) + 1;
    for (let f = 0; f < fieldCount; f++) {
      const words = fields[f] ?? [];
      const slot = partition * fieldCount + f;
      totals[slot] = (totals[slot] ?? 0) + words.length;
      lengths[d * fieldCount + f] = words.length;
      for (const w of words) {
        let id = vocab.get(w);
        if (id === undefined) {
          id = terms.length;
          vocab.set(w, id);
          terms.push(w);
          df.push(0);
          lastDoc.push(-1);
        }
        if (lastDoc[id] !== d) {
          lastDoc[id] = d;
          df[id] = (df[id] ?? 0) + 1;
        }
        ids[next++] = id;
      }
    }
  }
  yield;
  // Average field lengths per partition: the global docs, plus the partition's own for a tenant's.
  const averages = new Float64Array(partitionCount * fieldCount);
  for (let p = 0; p < partitionCount; p++) {
    const count = (partitionDocs[0] ?? 0) + (p > 0 ? (partitionDocs[p] ?? 0) : 0);
    for (let f = 0; f < fieldCount; f++) {
      const total = (totals[f] ?? 0) + (p > 0 ? (totals[p * fieldCount + f] ?? 0) : 0);
      averages[p * fieldCount + f] = count > 0 ? total / count : 0;
    }
  }
  const norm = new Float32Array(n * fieldCount);
  for (let d = 0; d < n; d++) {
    const partition = owners?.[d] ?? 0;
    for (let f = 0; f < fieldCount; f++) {
      const avg = averages[partition * fieldCount + f] ?? 0;
      const b = config.b[f] ?? 0.75;
      const len = lengths[d * fieldCount + f] ?? 0;
      norm[d * fieldCount + f] = 1 / (1 - b + (avg > 0 ? (b * len) / avg : 0));
    }
  }
  const { k1, weights } = config;
  const vocabSize = terms.length;
  const start = new Int32Array(vocabSize + 1);
  for (let id = 0; id < vocabSize; id++) start[id + 1] = (start[id] ?? 0) + (df[id] ?? 0);
  const allDocs = new Int32Array(start[vocabSize] ?? 0);
  const allSat = new Float32Array(allDocs.length);
  // Pass 2, a doc at a time: per-field counts of its terms in scratch slots, then one posting per
  // distinct term. Docs go in increasing order, so every posting list comes out sorted.
  const nextPosting = start.slice(0, vocabSize);
  const tf = new Float64Array(vocabSize * fieldCount);
  const docTerms: number[] = [];
  lastDoc.fill(-1);
  next = 0;
  for (let d = 0; d < n; d++) {
    if (d % DOCS_PER_STEP === 0) yield;
    for (let f = 0; f < fieldCount; f++) {
      const len = lengths[d * fieldCount + f] ?? 0;
      for (let k = 0; k < len; k++) {
        const id = ids[next++] ?? 0;
        if (lastDoc[id] !== d) {
          lastDoc[id] = d;
          docTerms.push(id);
        }
        const slot = id * fieldCount + f;
        tf[slot] = Math.min((tf[slot] ?? 0) + 1, 65_535);
      }
    }
    for (const id of docTerms) {
      const slot = id * fieldCount;
      let tfw = 0;
      for (let f = 0; f < fieldCount; f++) {
        tfw += (weights[f] ?? 1) * (tf[slot + f] ?? 0) * (norm[d * fieldCount + f] ?? 1);
        tf[slot + f] = 0;
      }
      const at = nextPosting[id] ?? 0;
      nextPosting[id] = at + 1;
      allDocs[at] = d;
      allSat[at] = (tfw * (k1 + 1)) / (k1 + tfw);
    }
    docTerms.length = 0;
  }
  const postings: Postings = { start, docs: allDocs, sat: allSat };
  // Forward index for pseudo-relevance feedback (only words, not the phrase pairs).
  const counts = new Int32Array(n + 1);
  for (let id = 0; id < vocabSize; id++) {
    if (id % TERMS_PER_STEP === 0) yield;
    if ((terms[id] ?? "").includes(" ")) continue;
    for (let i = start[id] ?? 0; i < (start[id + 1] ?? 0); i++) {
      const at = (allDocs[i] ?? 0) + 1;
      counts[at] = (counts[at] ?? 0) + 1;
    }
  }
  for (let d = 0; d < n; d++) counts[d + 1] = (counts[d + 1] ?? 0) + (counts[d] ?? 0);
  const fwdStart = counts;
  const total = counts[n] ?? 0;
  const fwdTerm = new Int32Array(total);
  const fwdSat = new Float32Array(total);
  const fill = counts.slice(0, n);
  for (let id = 0; id < vocabSize; id++) {
    if (id % TERMS_PER_STEP === 0) yield;
    if ((terms[id] ?? "").includes(" ")) continue;
    for (let i = start[id] ?? 0; i < (start[id + 1] ?? 0); i++) {
      const d = allDocs[i] ?? 0;
      const at = fill[d] ?? 0;
      fill[d] = at + 1;
      fwdTerm[at] = id;
      fwdSat[at] = allSat[i] ?? 0;
    }
  }
  yield;
  // Built with the index, so the first typo a caller sends does not pay for it.
  const firstChar = yield* firstCharBuckets(terms);
  return { vocab, terms, postings, fwdStart, fwdTerm, fwdSat, firstChar };
}

/**
 * Term ids by first character, each list sorted by term length. Ids are put in order of term length
 * by counting sort (no comparator calls over the whole vocabulary), then split by first character.
 */
function* firstCharBuckets(terms: readonly string[]): Generator<void, Map<string, Int32Array>> {
  const maxLength = terms.reduce((m, t) => Math.max(m, t.length), 0);
  const starts = new Int32Array(maxLength + 2);
  for (const t of terms) starts[t.length + 1] = (starts[t.length + 1] ?? 0) + 1;
  for (let l = 0; l <= maxLength; l++) starts[l + 1] = (starts[l + 1] ?? 0) + (starts[l] ?? 0);
  yield;
  const byLength = new Int32Array(terms.length);
  for (let id = 0; id < terms.length; id++) {
    if (id % TERMS_PER_STEP === 0) yield;
    const l = terms[id]?.length ?? 0;
    const at = starts[l] ?? 0;
    starts[l] = at + 1;
    byLength[at] = id;
  }
  const lists = new Map<string, number[]>();
  for (let i = 0; i < byLength.length; i++) {
    if (i % TERMS_PER_STEP === 0) yield;
    const id = byLength[i] as number;
    const term = terms[id] ?? "";
    // Word pairs of the phrases field are no spelling of a query word.
    if (term.includes(" ")) continue;
    const key = term[0] ?? "";
    const list = lists.get(key);
    if (list) list.push(id);
    else lists.set(key, [id]);
  }
  const buckets = new Map<string, Int32Array>();
  for (const [key, ids] of lists) {
    yield;
    buckets.set(key, Int32Array.from(ids));
  }
  return buckets;
}
