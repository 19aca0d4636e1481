/** Recall@k and MRR of FTS search over labelled queries. */
import type { IndexHost } from "../src/discovery/index.ts";
import { clipQuery, type Query } from "./lib/discovery-data.ts";

export interface Metrics {
  r1: number;
  r5: number;
  r10: number;
  mrr: number;
  n: number;
}

export function evaluate(index: IndexHost, queries: readonly Query[], aliasOf: Map<string, string>): Metrics {
  const m = { r1: 0, r5: 0, r10: 0, mrr: 0, n: 0 };
  for (const q of queries) {
    const gold = new Set(q.gold.map((g) => aliasOf.get(g) ?? g));
    // The API caps a page at 20, which is all Recall@10 and MRR@20 need.
    const text = clipQuery(q.query);
    const names = index.search({ query: text, limit: 20 }).tools.map((t) => t.name);
    const recall = (k: number) => names.slice(0, k).filter((n) => gold.has(n)).length / gold.size;
    m.r1 += recall(1);
    m.r5 += recall(5);
    m.r10 += recall(10);
    const first = names.findIndex((n) => gold.has(n));
    m.mrr += first >= 0 ? 1 / (first + 1) : 0;
    m.n++;
  }
  return { r1: m.r1 / m.n, r5: m.r5 / m.n, r10: m.r10 / m.n, mrr: m.mrr / m.n, n: m.n };
}
