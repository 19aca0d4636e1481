/**
 * Is an absolute score a signal an agent can act on? Each request's best hit is observed three ways:
 * by words (the lexical score), by meaning alone (the model's best cosine) and as a server ranks by
 * default (hybrid, the fused score). A best hit that is one of the request's gold tools should be
 * GOOD; the best hit of a request asked of a catalog it was not written for (toolbench requests
 * against the MetaTool plugins and the other way round: mostly no fitting tool) should be WEAK.
 *
 * - Semantic scores: the model's curve, score = 1 / (1 + e^-(intercept + slope × cosine))
 *   (src/semantic/calibration.ts), fitted here by logistic regression (balanced classes) of GOOD on
 *   the best cosine. `--write` stores the fit as the model folder's calibration.json.
 * - Lexical scores: the refit of their curve (src/search/fts.ts LEXICAL_CALIBRATION) should
 *   stay near intercept 0, slope 1.
 * - Thresholds (`tool_search.good_match_score`): the balanced accuracy of each, for words and for the
 *   fused score, chosen on the even half.
 *
 * Everything is fitted and chosen on the even half (a request's position in its file) and reported on
 * the odd half. The model: the shipped one, or WAYFIND_MODEL_DIR. `--tier static` reads every request
 * by the model's static tier instead (its own curve: `--write` stores it as static/calibration.json).
 * Usage: node --import tsx bench/score-calibration.ts [--write] [--tier model|static]
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ScoreCalibration } from "../src/semantic/calibration.ts";
import { Embedder } from "../src/semantic/index.ts";
import { clipQuery, type Query, readQueries, sample, table } from "./lib/discovery-data.ts";
import { BENCH_MODEL_DIR, type BenchTier, type HybridCatalog, openHybrid } from "./lib/hybrid.ts";

type Half = "even" | "odd";
type Way = "lexical" | "cosine" | "hybrid";

interface Observed {
  /** The best hit's score (a cosine for "cosine"), or undefined when nothing matched. */
  readonly best: number | undefined;
  /** In-domain with a gold best hit (should be GOOD), or foreign (should be WEAK). */
  readonly kind: "gold" | "foreign";
}

const SETS = ["toolbench", "metatool"] as const;
const TIER: BenchTier = process.argv.includes("--tier")
  ? (process.argv[process.argv.indexOf("--tier") + 1] as BenchTier)
  : "model";
if (TIER !== "model" && TIER !== "static") throw new Error("--tier: model or static");
const PER_SET = 1_500;

/** Requests sampled, each with the half its position in its file puts it in. */
function halvesOf(file: string): { readonly query: Query; readonly half: Half }[] {
  const positioned = readQueries(file).map((query, i) => ({
    query,
    half: (i % 2 === 0 ? "even" : "odd") as Half,
  }));
  return sample(positioned, PER_SET);
}

/** The logistic curve being fitted, starting as the unit one: a score then reads back as the cosine. */
const curve = { intercept: 0, slope: 1 };

async function bestHits(opened: HybridCatalog, query: string) {
  const clipped = clipQuery(query);
  const words = opened.index.search({ query: clipped, limit: 1 }).tools[0];
  const semantic = TIER === "static" ? opened.semanticStatic : opened.semantic;
  if (semantic === undefined) throw new Error(`score-calibration: no ${TIER} tier`);
  const prepared = opened.index.prepare({ query: clipped, limit: 1 });
  const meaning = opened.index.meaningOf(prepared);
  const evidence = await semantic.evidence(meaning);
  const nearest = evidence.closest[0];
  const score = nearest === undefined ? undefined : evidence.scoreOf(nearest);
  const fused = opened.index.searchPrepared(prepared, { semantic: evidence }).tools[0];
  return {
    lexical: words && { name: words.name, score: words.score },
    cosine:
      nearest === undefined || score === undefined
        ? undefined
        : {
            name: meaning.index.docs[nearest]?.name ?? "",
            score: (Math.log(score / (1 - score)) - curve.intercept) / curve.slope,
          },
    hybrid: fused && { name: fused.name, score: fused.score },
  };
}

/** Every request of both sets against both catalogs, observed the `ways` asked. */
async function observeAll(
  embedder: Embedder,
  ways: readonly Way[],
): Promise<Record<Way, Record<Half, Observed[]>>> {
  const out = Object.fromEntries(
    (["lexical", "cosine", "hybrid"] as const).map((w) => [w, { even: [], odd: [] }]),
  ) as unknown as Record<Way, Record<Half, Observed[]>>;
  for (const set of SETS) {
    const other = SETS.find((s) => s !== set) ?? set;
    const opened = await openHybrid([`${set}_catalog.jsonl`], embedder, curve);
    for (const [file, foreign] of [
      [`${set}_queries.jsonl`, false],
      [`${other}_queries.jsonl`, true],
    ] as const)
      for (const { query, half } of halvesOf(file)) {
        const hits = await bestHits(opened, query.query);
        for (const way of ways) {
          const top = hits[way];
          if (foreign) out[way][half].push({ best: top?.score, kind: "foreign" });
          else if (top && query.gold.some((g) => (opened.aliasOf.get(g) ?? g) === top.name))
            out[way][half].push({ best: top.score, kind: "gold" });
        }
      }
    await opened.close();
  }
  return out;
}

function rates(observed: readonly Observed[], threshold: number) {
  const gold = observed.filter((o) => o.kind === "gold");
  const foreign = observed.filter((o) => o.kind === "foreign");
  const good = gold.filter((o) => (o.best ?? Number.NEGATIVE_INFINITY) >= threshold).length / gold.length;
  const weak =
    foreign.filter((o) => (o.best ?? Number.NEGATIVE_INFINITY) < threshold).length / foreign.length;
  return { good, weak, balanced: (good + weak) / 2, gold: gold.length, foreign: foreign.length };
}

/** 1-D logistic regression of "gold" on x, by Newton's method (balanced class weights). */
function fitLogistic(points: readonly { x: number; y: 0 | 1 }[]): ScoreCalibration {
  const positives = points.filter((p) => p.y === 1).length;
  const weight = (y: number) =>
    y === 1 ? points.length / (2 * positives) : points.length / (2 * (points.length - positives));
  let a = 0;
  let b = 1;
  for (let step = 0; step < 50; step++) {
    let ga = 0,
      gb = 0,
      haa = 0,
      hab = 0,
      hbb = 0;
    for (const { x, y } of points) {
      const p = 1 / (1 + Math.exp(-(a + b * x)));
      const w = weight(y);
      ga += w * (y - p);
      gb += w * (y - p) * x;
      const h = w * p * (1 - p);
      haa += h;
      hab += h * x;
      hbb += h * x * x;
    }
    const det = haa * hbb - hab * hab;
    if (det === 0) break;
    a += (hbb * ga - hab * gb) / det;
    b += (haa * gb - hab * ga) / det;
  }
  return { intercept: a, slope: b };
}

const label = (o: Observed): 0 | 1 => (o.kind === "gold" ? 1 : 0);

/** The threshold table of one kind of score: fixed thresholds and the one best on the even half. */
function thresholds(name: string, halves: Record<Half, Observed[]>, fixed: readonly number[]): string {
  const grid = Array.from({ length: 19 }, (_, i) => (i + 1) / 20);
  const chosen = grid.reduce((best, t) =>
    rates(halves.even, t).balanced > rates(halves.even, best).balanced ? t : best,
  );
  const rows: (string | number)[][] = [
    [`${name} threshold`, "half", "gold best hit GOOD", "foreign best hit WEAK", "balanced"],
  ];
  for (const t of [...fixed, chosen])
    for (const half of ["even", "odd"] as const) {
      const r = rates(halves[half], t);
      rows.push([t === chosen ? `${t} (best on even)` : `${t}`, half, r.good, r.weak, r.balanced]);
    }
  const [even, odd] = [rates(halves.even, chosen), rates(halves.odd, chosen)];
  return `${table(rows)}\ngold best hits ${even.gold} even / ${odd.gold} odd; foreign requests ${even.foreign} / ${odd.foreign}\n`;
}

async function main(): Promise<void> {
  const embedder = await Embedder.open(BENCH_MODEL_DIR, { queryCacheSize: 10_000 });
  try {
    // Pass 1: words and cosines; the semantic curve is fitted on the even half's cosines.
    const first = await observeAll(embedder, ["lexical", "cosine"]);
    console.log(thresholds("lexical", first.lexical, [0.3, 0.4, 0.5, 0.6, 0.7]));
    const lexicalPoints = first.lexical.even
      .filter((o) => o.best !== undefined && o.best > 0 && o.best < 1)
      .map((o) => ({ x: Math.log((o.best as number) / (1 - (o.best as number))), y: label(o) }));
    const refit = fitLogistic(lexicalPoints);
    console.log(
      `lexical refit of logit(score) on the even half: intercept ${refit.intercept.toFixed(3)}, slope ${refit.slope.toFixed(3)} (calibrated: 0 and 1)\n`,
    );
    const fit = fitLogistic(
      first.cosine.even
        .filter((o) => o.best !== undefined)
        .map((o) => ({ x: o.best as number, y: label(o) })),
    );
    const rounded = { intercept: Number(fit.intercept.toFixed(3)), slope: Number(fit.slope.toFixed(3)) };
    console.log(
      `semantic curve of the ${TIER} tier fitted on the even half (${BENCH_MODEL_DIR}): ${JSON.stringify(rounded)}; score 0.5 at cosine ${(-rounded.intercept / rounded.slope).toFixed(3)}`,
    );
    const asScores = (o: Observed): Observed => ({
      ...o,
      best:
        o.best === undefined ? undefined : 1 / (1 + Math.exp(-(rounded.intercept + rounded.slope * o.best))),
    });
    console.log(
      thresholds(
        "semantic",
        { even: first.cosine.even.map(asScores), odd: first.cosine.odd.map(asScores) },
        [0.5],
      ),
    );
    if (process.argv.includes("--write")) {
      const file = join(BENCH_MODEL_DIR, TIER === "static" ? "static/calibration.json" : "calibration.json");
      writeFileSync(file, `${JSON.stringify(rounded, null, 2)}\n`);
      console.log(`wrote ${file}\n`);
    }
    // Pass 2: fused scores with the fitted curve.
    Object.assign(curve, rounded);
    const second = await observeAll(embedder, ["hybrid"]);
    console.log(thresholds("hybrid (fused)", second.hybrid, [0.3, 0.4, 0.5, 0.6, 0.7]));
  } finally {
    await embedder.close();
  }
}

await main();
