import { runInSlices, runToEnd } from "../slices.ts";
import { gallop } from "./postings.ts";

/**
 * Narrows a caller regex to the docs that can match it, from the literals every match must hold
 * (caller-regex.ts `requiredLiterals` / `anchoredPrefix`):
 *   - a trigram index (the idea of Russ Cox's "Regular Expression Matching with a Trigram Index"):
 *     a doc can only match if it contains every trigram of each literal of 3+ characters;
 *   - the fields sorted, for `^prefix` patterns: only a field starting with the prefix can match.
 * RE2 and the literal checks then run on a handful of docs instead of all of them. It only ever
 * proposes a superset: callers still run the literal check and RE2 on each candidate.
 */
export class LiteralIndex {
  private constructor(
    private readonly postings: ReadonlyMap<string, Int32Array>,
    /** Every field of every doc, sorted, with its doc at the same position. */
    private readonly sortedFields: readonly string[],
    private readonly sortedFieldDocs: Int32Array,
  ) {}

  /**
   * `fieldsOf(doc)` are the texts a regex is tested against one by one (name, description, each
   * tag…), folded like the literals (caller-regex.ts `fold`).
   */
  static build(docCount: number, fieldsOf: (doc: number) => readonly string[]): LiteralIndex {
    return runToEnd(LiteralIndex.steps(docCount, fieldsOf));
  }

  /**
   * The same index, built a slice of docs at a time between turns of the event loop: for a large
   * catalog the build is far more work than one turn should hold, and must not hold up other calls.
   * Resolves to undefined when `wanted()` turns false (the index it was for has been replaced).
   */
  static buildInSlices(
    docCount: number,
    fieldsOf: (doc: number) => readonly string[],
    wanted: () => boolean,
  ): Promise<LiteralIndex | undefined> {
    return runInSlices(LiteralIndex.steps(docCount, fieldsOf), wanted);
  }

  /**
   * The build, yielding between small groups of docs, of trigrams while packing, and of fields while
   * sorting (for a large catalog, packing or sorting all at once would be more than a slice).
   */
  private static *steps(
    docCount: number,
    fieldsOf: (doc: number) => readonly string[],
  ): Generator<void, LiteralIndex> {
    const builder = new LiteralIndexBuilder(fieldsOf);
    for (let doc = 0; doc < docCount; doc++) {
      // A tool's description holds hundreds of trigrams: a few tools per step.
      if (doc % DOCS_PER_STEP === 0) yield;
      builder.add(doc);
    }
    const postings = yield* builder.packPostings();
    return new LiteralIndex(postings, ...(yield* builder.sortFields()));
  }

  /**
   * Docs (ascending) that may match a pattern with these required literals and anchored prefix
   * ("" for none), or `undefined` when neither narrows anything (scan everything).
   */
  candidates(literals: readonly string[], prefix: string): Int32Array | undefined {
    const byTrigrams = this.withTrigrams(literals);
    if (!prefix) return byTrigrams;
    const byPrefix = this.withPrefix(prefix);
    return byTrigrams ? intersect(byPrefix, byTrigrams) : byPrefix;
  }

  /** Docs with a field starting with `prefix` (a binary search over the sorted fields). */
  private withPrefix(prefix: string): Int32Array {
    let lo = 0;
    let hi = this.sortedFields.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.sortedFields[mid] as string) < prefix) lo = mid + 1;
      else hi = mid;
    }
    let end = lo;
    while (end < this.sortedFields.length && (this.sortedFields[end] as string).startsWith(prefix)) end++;
    const docs = this.sortedFieldDocs.slice(lo, end).sort();
    // A doc with two fields starting with the prefix appears twice: keep one.
    let count = 0;
    for (let i = 0; i < docs.length; i++)
      if (i === 0 || docs[i] !== docs[i - 1]) docs[count++] = docs[i] as number;
    return docs.subarray(0, count);
  }

  /** Docs containing every trigram of every literal of 3+ characters; undefined when none is. */
  private withTrigrams(literals: readonly string[]): Int32Array | undefined {
    const trigrams = new Set<string>();
    for (const literal of literals)
      for (let i = 0; i + 3 <= literal.length; i++) trigrams.add(literal.slice(i, i + 3));
    if (trigrams.size === 0) return undefined;
    const lists: Int32Array[] = [];
    for (const trigram of trigrams) {
      const docs = this.postings.get(trigram);
      if (!docs) return new Int32Array(0);
      lists.push(docs);
    }
    lists.sort((a, b) => a.length - b.length);
    let result = lists[0] as Int32Array;
    for (const list of lists.slice(1)) {
      result = intersect(result, list);
      if (result.length === 0) break;
    }
    return result;
  }
}

/** Sorted intersection; `small` is walked, `large` galloped through from the last position found. */
function intersect(small: Int32Array, large: Int32Array): Int32Array {
  const out = new Int32Array(small.length);
  let count = 0;
  let from = 0;
  for (const doc of small) {
    from = gallop(large, doc, from);
    if (from === large.length) break;
    if (large[from] === doc) out[count++] = doc;
  }
  return out.subarray(0, count);
}

interface Field {
  readonly text: string;
  readonly doc: number;
}

/** Docs added, trigrams packed or fields sorted and merged between two yields of a build. */
const DOCS_PER_STEP = 8;
const ITEMS_PER_STEP = 2048;

/** Collects trigram postings and fields doc by doc, then packs them into a LiteralIndex. */
class LiteralIndexBuilder {
  private readonly postings = new Map<string, number[]>();
  private readonly fields: Field[] = [];

  constructor(private readonly fieldsOf: (doc: number) => readonly string[]) {}

  /** Docs must be added in ascending order (postings stay sorted). */
  add(doc: number): void {
    const docFields = this.fieldsOf(doc);
    for (const field of docFields) this.fields.push({ text: field, doc });
    // "\n" between fields: a literal never contains it, so no trigram spans two fields usefully.
    const text = docFields.join("\n");
    for (let i = 0; i + 3 <= text.length; i++) {
      const trigram = text.slice(i, i + 3);
      const docs = this.postings.get(trigram);
      if (!docs) this.postings.set(trigram, [doc]);
      else if (docs[docs.length - 1] !== doc) docs.push(doc);
    }
  }

  *packPostings(): Generator<void, Map<string, Int32Array>> {
    let total = 0;
    for (const docs of this.postings.values()) total += docs.length;
    // Views into one buffer: one backing store, not one per trigram.
    const all = new Int32Array(total);
    const postings = new Map<string, Int32Array>();
    let offset = 0;
    for (const [trigram, docs] of this.postings) {
      if (postings.size % ITEMS_PER_STEP === 0) yield;
      const view = all.subarray(offset, offset + docs.length);
      view.set(docs);
      postings.set(trigram, view);
      offset += docs.length;
    }
    return postings;
  }

  /**
   * Every field, sorted, and the doc of each: runs sorted one at a time, then merged pairwise, so no
   * single step sorts them all.
   */
  *sortFields(): Generator<void, [readonly string[], Int32Array]> {
    const byText = (a: Field, b: Field) => (a.text < b.text ? -1 : a.text > b.text ? 1 : a.doc - b.doc);
    let runs: Field[][] = [];
    for (let i = 0; i < this.fields.length; i += ITEMS_PER_STEP) {
      yield;
      runs.push(this.fields.slice(i, i + ITEMS_PER_STEP).sort(byText));
    }
    while (runs.length > 1) {
      const merged: Field[][] = [];
      for (let r = 0; r < runs.length; r += 2) {
        const a = runs[r] as Field[];
        const b = runs[r + 1];
        if (!b) {
          merged.push(a);
          continue;
        }
        const out: Field[] = [];
        let i = 0;
        let j = 0;
        while (i < a.length || j < b.length) {
          if (out.length % ITEMS_PER_STEP === 0) yield;
          const next =
            j >= b.length || (i < a.length && byText(a[i] as Field, b[j] as Field) <= 0) ? a[i++] : b[j++];
          out.push(next as Field);
        }
        merged.push(out);
      }
      runs = merged;
    }
    const fields = runs[0] ?? [];
    yield;
    return [fields.map((f) => f.text), Int32Array.from(fields, (f) => f.doc)];
  }
}
