/**
 * Held-out check for ranker changes (development aid): every query of toolbench and metatool, split
 * into even (tune) and odd (check) positions; prints R@1/5/10/MRR per half.
 * Usage: node --import tsx bench/lib/eval-halves.ts ['{"k1":1.5}' ...]   (RankerConfig overrides)
 */
import { IndexHost, ToolRegistry } from "../../src/discovery/index.ts";
import { TOOL_RANKER } from "../../src/discovery/search-index.ts";
import type { RankerConfig } from "../../src/search/ranker-options.ts";
import { evaluate } from "../search-quality-eval.ts";
import { openCatalog, readQueries } from "./discovery-data.ts";

const sets = await Promise.all(
  ["toolbench", "metatool"].map(async (set) => {
    const opened = await openCatalog([`${set}_catalog.jsonl`]);
    const all = readQueries(`${set}_queries.jsonl`);
    return {
      set,
      ...opened,
      even: all.filter((_, i) => i % 2 === 0),
      odd: all.filter((_, i) => i % 2 === 1),
    };
  }),
);

const f = (x: number) => x.toFixed(3);
const variants = process.argv.slice(2);
if (variants.length === 0) variants.push("{}");
for (const v of variants) {
  const cfg = { ...TOOL_RANKER, ...(JSON.parse(v) as Partial<RankerConfig>) } as RankerConfig;
  const parts: string[] = [];
  for (const s of sets) {
    // A registry of its own: a host lives as long as the registry it follows.
    const index = new IndexHost(new ToolRegistry(s.db), { ranker: cfg });
    for (const [half, qs] of [
      ["even", s.even],
      ["odd", s.odd],
    ] as const) {
      const m = evaluate(index, qs, s.aliasOf);
      parts.push(`${s.set.slice(0, 4)}-${half} ${f(m.r1)} ${f(m.r5)} ${f(m.r10)} ${f(m.mrr)}`);
    }
  }
  console.log(`${v}\n  ${parts.join(" | ")}`);
}
for (const s of sets) s.close();
