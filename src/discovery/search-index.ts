import type { JsonObject } from "../json.ts";
import { pairs } from "../search/fts.ts";
import { Ranker } from "../search/ranker.ts";
import { Candidates, RANKING_DEFAULTS, type RankerConfig } from "../search/ranker-options.ts";
import { analyze, bareName, nameKey, splitWords } from "../search/text.ts";
import { fold } from "../text/caller-regex.ts";
import type { SearchIndex, SideEffects, Tool } from "./types.ts";
import { isObject, type ToolRecord } from "./validate.ts";

/**
 * How tools are ranked: the shared settings, and the weight and length normalisation of each tool
 * field (name with aliases, title, tags, description, parameters, and word pairs of name and
 * description), tuned on the public tool sets (bench/lib/tune-discovery.ts).
 */
export const TOOL_RANKER: RankerConfig = {
  ...RANKING_DEFAULTS,
  weights: [2.25, 2, 0.85, 1, 0.8, 0.5],
  b: [0.9, 0.3, 0.3, 0.75, 0.5, 0.5],
};

/** Analysed text of one tool, kept between builds so a rebuild re-analyses only changed tools. */
export interface PackedAnalysis {
  readonly hash: string;
  readonly fields: readonly string[];
  readonly words: string;
  readonly glued: string;
}

export interface SearchIndexOptions {
  /** Namespaces that win ties, most preferred first. */
  readonly preferredNamespaces: readonly string[];
  readonly ranker: RankerConfig;
  /**
   * Analysed text by toolKey, read and filled by the build. Kept packed (each list joined with SEP:
   * one string instead of an array of small strings: a fraction of the heap) and unpacked only
   * while the index is built.
   */
  readonly analysed: Map<string, PackedAnalysis>;
}

/** Separates packed analysed terms; never part of a term (phrases hold spaces, terms no controls). */
const SEP = "\u0001";

/** Tools analysed (or name keys added) between two yields of the build. */
const DOCS_PER_STEP = 16;

const SIDE_EFFECT_RANK: Record<SideEffects, number> = {
  pure: 0,
  read: 1,
  write: 2,
  external: 3,
  stateful: 4,
};

/**
 * A tool's identity: names are unique per owner ("" = global), not across owners. A global tool's
 * key is its name (no extra string per tool); a tenant's holds a NUL, which no name contains.
 */
export function toolKey(owner: string, name: string): string {
  return owner === "" ? name : `${owner}\u0000${name}`;
}

/**
 * Builds the index of `tools`, yielding between small groups of docs and between phases: about a
 * second of work at 10,000 tools, none of it allowed to hold the event loop for long.
 */
export function* buildSearchIndex(
  tools: readonly Tool[],
  options: SearchIndexOptions,
): Generator<void, SearchIndex> {
  const docs = [...tools].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0,
  );
  const analysed: PackedAnalysis[] = [];
  for (const t of docs) {
    if (analysed.length % DOCS_PER_STEP === 0) yield;
    analysed.push(analysis(t, options.analysed));
  }
  const unpack = (packed: string) => (packed ? packed.split(SEP) : []);
  const unpacked: Analysed[] = [];
  for (const a of analysed) {
    if (unpacked.length % DOCS_PER_STEP === 0) yield;
    unpacked.push({ fields: a.fields.map(unpack), words: unpack(a.words), glued: unpack(a.glued) });
  }
  const fields = yield* segmentGluedNames(unpacked);
  yield;
  const tieOrder = tieBreakOrder(docs, options.preferredNamespaces);
  const tieRank = new Int32Array(docs.length);
  tieOrder.forEach((doc, pos) => {
    tieRank[doc] = pos;
  });
  const keys = new Map<string, number[]>();
  const byName = new Map<string, number>();
  const addKey = (k: string, d: number) => {
    if (!k) return;
    const list = keys.get(k);
    if (!list) keys.set(k, [d]);
    else if (!list.includes(d)) list.push(d);
  };
  const deferredMask = new Uint8Array(docs.length);
  const bareNames: string[] = [];
  const foldedNames: string[] = [];
  const foldedTexts: string[][] = [];
  for (let d = 0; d < docs.length; d++) {
    if (d % DOCS_PER_STEP === 0) yield;
    const t = docs[d] as Tool;
    if (!byName.has(t.name)) byName.set(t.name, d);
    addKey(nameKey(t.name), d);
    addKey(nameKey(bareName(t.name)), d);
    for (const a of t.aliases) addKey(nameKey(a), d);
    if (t.loadingMode === "deferred") deferredMask[d] = 1;
    bareNames.push(bareName(t.name));
    foldedNames.push(fold(t.name));
    foldedTexts.push([t.description, ...t.tags].map(fold));
  }
  // Owner partitions for length normalisation: 0 = global, then one number per tenant.
  const partitionOf = new Map<string, number>([["", 0]]);
  const owners = Int32Array.from(docs, (t) => {
    let partition = partitionOf.get(t.owner);
    if (partition === undefined) {
      partition = partitionOf.size;
      partitionOf.set(t.owner, partition);
    }
    return partition;
  });
  return {
    docs,
    docCount: docs.length,
    ownerOf: (doc) => docs[doc]?.owner ?? "",
    nameOf: (doc) => docs[doc]?.name ?? "",
    docsNamed: (name) => sameName(docs, byName, name),
    ranker: yield* Ranker.steps(fields, tieRank, options.ranker, owners),
    keys,
    byName,
    deferred: new Candidates(deferredMask),
    tieOrder,
    tieRank,
    bareNames,
    foldedNames,
    foldedTexts,
    textsOf: (doc) => {
      const tool = docs[doc] as Tool;
      return [tool.description, ...tool.tags];
    },
  };
}

/** Doc ids of the tools called `name`, one per owner (docs are sorted by name, then owner). */
function sameName(docs: readonly Tool[], byName: ReadonlyMap<string, number>, name: string): number[] {
  const first = byName.get(name);
  const ids: number[] = [];
  if (first === undefined) return ids;
  for (let d = first; d < docs.length && docs[d]?.name === name; d++) ids.push(d);
  return ids;
}

/** The analysed text of `t`, from the cache while its hash is unchanged. */
function analysis(t: Tool, cache: Map<string, PackedAnalysis>): PackedAnalysis {
  const key = toolKey(t.owner, t.name);
  const cached = cache.get(key);
  if (cached && cached.hash === t.hash) return cached;
  const texts = searchText(t);
  const f = texts.map(analyze);
  f.push([...pairs(f[0] ?? []), ...pairs(f[3] ?? [])]);
  const entry = {
    hash: t.hash,
    fields: f.map((terms) => terms.join(SEP)),
    // Words of the prose (description, parameters): the dictionary glued names are split with.
    words: [...new Set(splitWords(`${texts[3] ?? ""} ${texts[4] ?? ""}`))].join(SEP),
    // Long name parts that may be several words run together ("getrandomimage").
    glued: [...new Set(splitWords(texts[0] ?? ""))]
      .filter((w) => w.length >= GLUED_MIN && /^[a-z]+$/.test(w))
      .join(SEP),
  };
  cache.set(key, entry);
  return entry;
}

/** Doc ids by tie-break: preferred namespace, then milder side effects, then shorter name. */
function tieBreakOrder(docs: readonly Tool[], preferred: readonly string[]): Int32Array {
  const order = docs.map((_, i) => i);
  const pref = (t: Tool) => {
    const i = preferred.indexOf(t.namespace);
    return i < 0 ? preferred.length : i;
  };
  order.sort((x, y) => {
    const a = docs[x] as Tool;
    const b = docs[y] as Tool;
    return (
      pref(a) - pref(b) ||
      SIDE_EFFECT_RANK[a.sideEffects] - SIDE_EFFECT_RANK[b.sideEffects] ||
      a.name.length - b.name.length ||
      x - y
    );
  });
  return Int32Array.from(order);
}

interface Analysed {
  readonly fields: string[][];
  readonly words: string[];
  readonly glued: string[];
}

const GLUED_MIN = 6;

/**
 * Name parts written as one run of letters ("getrandomimage", "weatherapi") are split into words the
 * catalog's own prose uses, and those words are added to the name field. The dictionary is the
 * catalog's description and parameter words, so this adapts to any catalog without a word list.
 */
function* segmentGluedNames(analysed: readonly Analysed[]): Generator<void, string[][][]> {
  const dict = new Set<string>();
  for (let d = 0; d < analysed.length; d++) {
    if (d % DOCS_PER_STEP === 0) yield;
    for (const w of analysed[d]?.words ?? []) if (w.length >= 3 && w.length <= 20) dict.add(w);
  }
  const memo = new Map<string, string[]>();
  const out: string[][][] = [];
  for (const a of analysed) {
    if (out.length % DOCS_PER_STEP === 0) yield;
    const extra: string[] = [];
    for (const w of a.glued) {
      if (dict.has(w)) continue;
      let parts = memo.get(w);
      if (!parts) {
        parts = segment(w, dict);
        memo.set(w, parts);
      }
      for (const p of parts) extra.push(...analyze(p));
    }
    if (extra.length === 0) {
      out.push(a.fields);
      continue;
    }
    const fields = [...a.fields];
    fields[0] = [...(a.fields[0] ?? []), ...extra];
    out.push(fields);
  }
  return out;
}

/** Fewest dictionary words (3+ letters each) that spell `word` exactly; [] when none do. */
function segment(word: string, dict: ReadonlySet<string>): string[] {
  const n = word.length;
  if (n > 40) return [];
  const best = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  const from = new Array<number>(n + 1).fill(-1);
  best[0] = 0;
  for (let i = 3; i <= n; i++)
    for (let j = Math.max(0, i - 20); j <= i - 3; j++) {
      const cost = (best[j] ?? Number.POSITIVE_INFINITY) + 1;
      if (cost < (best[i] ?? Number.POSITIVE_INFINITY) && dict.has(word.slice(j, i))) {
        best[i] = cost;
        from[i] = j;
      }
    }
  if (!Number.isFinite(best[n] ?? Number.POSITIVE_INFINITY) || (best[n] ?? 0) < 2) return [];
  const parts: string[] = [];
  for (let i = n; i > 0; i = from[i] ?? 0) parts.unshift(word.slice(from[i] ?? 0, i));
  return parts;
}

/** The text of each ranker field but the last, in TOOL_RANKER's order (name, title, tags, description, params). */
function searchText(t: ToolRecord): string[] {
  return [
    [t.name, ...t.aliases].join(" "),
    t.title,
    t.tags.join(" "),
    t.description,
    paramText(t.argsSchema, 0),
  ];
}

/**
 * Parameter names and descriptions, a few levels deep, following the schema's own `$ref`s
 * (`#/$defs/…`, `#/definitions/…`, `#/properties/…`), so a parameter described once under `$defs` is
 * read where it is used. The depth bound also ends a `$ref` that leads back to itself.
 */
function paramText(schema: JsonObject, depth: number, root: JsonObject = schema): string {
  if (depth > 3) return "";
  const parts: string[] = [];
  const props = resolved(schema, root).properties;
  if (isObject(props))
    for (const [key, declared] of Object.entries(props)) {
      parts.push(key);
      if (!isObject(declared)) continue;
      const value = resolved(declared, root);
      for (const at of value === declared ? [declared] : [declared, value]) {
        if (typeof at.description === "string") parts.push(at.description);
        if (typeof at.title === "string") parts.push(at.title);
      }
      parts.push(paramText(value, depth + 1, root));
      if (isObject(value.items)) parts.push(paramText(value.items, depth + 1, root));
    }
  return parts.filter((p) => p.length > 0).join(" ");
}

/** The schema a local `$ref` (a JSON pointer into `root`) names, or the schema itself. */
function resolved(schema: JsonObject, root: JsonObject): JsonObject {
  const ref = schema.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return schema;
  let at: unknown = root;
  for (const key of ref.slice(2).split("/"))
    at = isObject(at) ? at[key.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
  return isObject(at) ? at : schema;
}
