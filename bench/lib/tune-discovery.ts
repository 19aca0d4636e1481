/**
 * Coordinate search over ranker parameters (development aid; prints R@5/MRR per set). Tunes on the
 * even-position queries only; check the result on the odd half with bench/lib/eval-halves.ts.
 */
import { IndexHost, ToolRegistry } from "../../src/discovery/index.ts";
import { TOOL_RANKER } from "../../src/discovery/search-index.ts";
import type { RankerConfig } from "../../src/search/ranker-options.ts";
import { evaluate } from "../search-quality-eval.ts";
import { openCatalog, readQueries } from "./discovery-data.ts";

const sets = await Promise.all(
  ["toolbench", "metatool"].map(async (set) => {
    const opened = await openCatalog([`${set}_catalog.jsonl`]);
    return { set, ...opened, queries: readQueries(`${set}_queries.jsonl`).filter((_, i) => i % 2 === 0) };
  }),
);

function score(cfg: RankerConfig): { line: string; obj: number } {
  let obj = 0;
  const parts: string[] = [];
  for (const s of sets) {
    // A registry of its own: a host lives as long as the registry it follows.
    const index = new IndexHost(new ToolRegistry(s.db), { ranker: cfg });
    const m = evaluate(index, s.queries, s.aliasOf);
    obj += m.r5 + m.mrr * 0.5;
    parts.push(
      `${s.set} r1 ${m.r1.toFixed(3)} r5 ${m.r5.toFixed(3)} r10 ${m.r10.toFixed(3)} mrr ${m.mrr.toFixed(3)}`,
    );
  }
  return { line: parts.join(" | "), obj };
}

let best: RankerConfig = TOOL_RANKER;
let bestScore = score(best);
console.log("start", JSON.stringify(best), bestScore.line);
const tweaks: ((c: RankerConfig) => RankerConfig[])[] = [
  (c) => [0.6, 0.9, 1.5, 2].map((k1) => ({ ...c, k1 })),
  (c) => [0, 0.25, 1, 2].map((coordination) => ({ ...c, coordination })),
  ...[0, 1, 2, 4].map(
    (f) => (c: RankerConfig) =>
      [0.5, 0.75, 1.5, 2].map((m) => ({ ...c, weights: c.weights.map((w, i) => (i === f ? w * m : w)) })),
  ),
  ...[0, 3, 4].map(
    (f) => (c: RankerConfig) => [0, 0.5, 0.9].map((v) => ({ ...c, b: c.b.map((x, i) => (i === f ? v : x)) })),
  ),
];
for (let round = 0; round < 1; round++)
  for (const tweak of tweaks)
    for (const cfg of tweak(best)) {
      const s = score(cfg);
      if (s.obj > bestScore.obj + 1e-4) {
        best = cfg;
        bestScore = s;
        console.log("better", JSON.stringify(best), s.line);
      }
    }
console.log("best", JSON.stringify(best), bestScore.line);
