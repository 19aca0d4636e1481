/**
 * Retrieval quality of wayfind's FTS search on public data (see data/eval/README.md):
 * every toolbench and metatool query against each whole catalog (no sampling; ~10 s).
 * Usage: node --import tsx bench/search-quality.ts [--sample N]   (deterministic every-k-th sample)
 */

import { openCatalog, readQueries, sample, table } from "./lib/discovery-data.ts";
import { injectTypos } from "./lib/typos.ts";
import { evaluate } from "./search-quality-eval.ts";

const BASELINES: Record<string, [string, number, number, number, number][]> = {
  toolbench: [
    ["baseline FTS5 AND→OR", 0.272, 0.574, 0.673, 0.671],
    ["baseline BM25", 0.313, 0.673, 0.76, 0.761],
  ],
  metatool: [
    ["baseline FTS5 AND→OR", 0.301, 0.504, 0.593, 0.391],
    ["baseline BM25", 0.366, 0.54, 0.601, 0.451],
  ],
};

async function main(): Promise<void> {
  const at = process.argv.indexOf("--sample");
  const max = at >= 0 ? Number(process.argv[at + 1]) : Number.POSITIVE_INFINITY;
  const started = performance.now();
  const rows: (string | number)[][] = [["set", "ranker", "queries", "R@1", "R@5", "R@10", "MRR"]];
  for (const set of ["toolbench", "metatool"]) {
    const { catalog, close, aliasOf } = await openCatalog([`${set}_catalog.jsonl`]);
    let queries = readQueries(`${set}_queries.jsonl`);
    const total = queries.length;
    if (Number.isFinite(max)) queries = sample(queries, max);
    const t0 = performance.now();
    const m = evaluate(catalog, queries, aliasOf);
    const ms = performance.now() - t0;
    for (const b of BASELINES[set] ?? []) rows.push([set, b[0], `${total}`, b[1], b[2], b[3], b[4]]);
    rows.push([set, "wayfind", m.n === total ? `${m.n}` : `${m.n} of ${total}`, m.r1, m.r5, m.r10, m.mrr]);
    // Typo robustness: the same queries with one or two seeded edits, per half (even = where
    // parameters were chosen, odd = held out), and the share of the clean R@5 kept.
    for (const parity of [0, 1]) {
      const half = queries.filter((_, i) => i % 2 === parity);
      const clean = evaluate(catalog, half, aliasOf);
      const typos = evaluate(
        catalog,
        half.map((q) => ({ ...q, query: injectTypos(q.query, q.id) })),
        aliasOf,
      );
      const kept = `kept ${((100 * typos.r5) / clean.r5).toFixed(1)} % of R@5`;
      rows.push([
        set,
        `wayfind, typos (${parity === 0 ? "even" : "odd"}; ${kept})`,
        `${typos.n}`,
        typos.r1,
        typos.r5,
        typos.r10,
        typos.mrr,
      ]);
    }
    console.error(
      `${set}: ${m.n} queries in ${(ms / 1000).toFixed(1)} s (${(ms / m.n).toFixed(2)} ms/query)`,
    );
    close();
  }
  console.log(table(rows));
  console.log(
    `\n${Number.isFinite(max) ? `deterministic sample of at most ${max} queries per set` : "every query of both sets"}; R@k over the top k, MRR over the top 20 (the API's maximum page)`,
  );
  console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
