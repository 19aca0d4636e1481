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
  const sum = new MetricsSum();
  for (const q of queries) {
    // The API caps a page at 20, which is all Recall@10 and MRR@20 need.
    const names = index.search({ query: clipQuery(q.query), limit: 20 }).tools.map((t) => t.name);
    sum.add(
      q.gold.map((g) => aliasOf.get(g) ?? g),
      names,
    );
  }
  return sum.average();
}

/** Recall@1/5/10 (share of the gold tools) and reciprocal rank of the first gold tool, summed over requests. */
export class MetricsSum {
  private readonly sum = { r1: 0, r5: 0, r10: 0, mrr: 0 };
  private n = 0;

  add(goldNames: readonly string[], ranked: readonly string[]): void {
    const gold = new Set(goldNames);
    const recall = (k: number) => ranked.slice(0, k).filter((n) => gold.has(n)).length / gold.size;
    this.sum.r1 += recall(1);
    this.sum.r5 += recall(5);
    this.sum.r10 += recall(10);
    const first = ranked.findIndex((n) => gold.has(n));
    this.sum.mrr += first >= 0 ? 1 / (first + 1) : 0;
    this.n++;
  }

  /** The means over the requests added (0 when none were). */
  average(): Metrics {
    const n = Math.max(1, this.n);
    const { r1, r5, r10, mrr } = this.sum;
    return { r1: r1 / n, r5: r5 / n, r10: r10 / n, mrr: mrr / n, n: this.n };
  }
}
