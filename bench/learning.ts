/**
 * Learning from use on public data (data/eval): sessions replayed from the even half of a set's
 * requests (search as the default server does, then the gold tool chosen from the hits, as an agent
 * opening it would), then the odd half searched and scored. Prints the learning curve (R@1 / R@5 after
 * 10 %, 50 % and 100 % of the sessions), a run with 20 % of the choices wrong, a run where tools are
 * renamed midway, a cold tenant, and the cost (search overhead, storage per 100,000 lessons).
 * Usage: node --import tsx bench/learning.ts [--metatool-every K] [--weight W] [--metatool-only] [--no-cost | --cost-only] [--tune] [--curve-only]
 */

import { statSync } from "node:fs";
import { ANONYMOUS_CALLER, type Caller } from "../src/caller/caller.ts";
import { DEFAULTS } from "../src/config/defaults.ts";
import type { ToolInput } from "../src/discovery/index.ts";
import { Learning } from "../src/learning/index.ts";
import { LocalWriter } from "../src/replication/writes.ts";
import { Embedder } from "../src/semantic/index.ts";
import { clipQuery, type Query, readQueries, table } from "./lib/discovery-data.ts";
import { BENCH_MODEL_DIR, type HybridCatalog, openHybrid } from "./lib/hybrid.ts";
import { MetricsSum } from "./search-quality-eval.ts";

const at = process.argv.indexOf("--metatool-every");
const METATOOL_EVERY = at >= 0 ? Number(process.argv[at + 1]) : 3;
const weightAt = process.argv.indexOf("--weight");
/** learning.weight for the run (default: the shipped default), to compare settings. */
const LEARNING =
  weightAt >= 0 ? { ...DEFAULTS.learning, weight: Number(process.argv[weightAt + 1]) } : DEFAULTS.learning;
/** --tune: the even half only, split in two (settings are chosen so; the odd half is held out). */
const TUNE = process.argv.includes("--tune");
/** --curve-only: the learning curve alone (no noisy, cold or renamed runs). */
const CURVE_ONLY = process.argv.includes("--curve-only");
const SETS = process.argv.includes("--metatool-only") ? ["metatool"] : ["toolbench", "metatool"];
/** The share of choices made wrong in the noisy run, and the seed that picks them. */
const WRONG_SHARE = 0.2;

const caller = (tenantId: string, runId = ""): Caller => ({ ...ANONYMOUS_CALLER, tenantId, runId });

/** A tenant's searches as ToolService runs them: meaning, then what the tenant learned, then the search. */
async function search(opened: HybridCatalog, learning: Learning, who: Caller, query: string, limit = 20) {
  const prepared = opened.index.prepare({ query, limit });
  const evidence = opened.semantic && (await opened.semantic.evidence(opened.index.meaningOf(prepared)));
  const learned = await learning.evidence(who, query, evidence?.vectors ?? []);
  return opened.index.searchPrepared(prepared, { semantic: evidence, learned }).tools.map((t) => t.name);
}

/** Replays `sessions` for `tenant`: each searches, then chooses its gold tool (or, if `wrong`, another hit). */
async function replay(
  opened: HybridCatalog,
  learning: Learning,
  tenant: string,
  sessions: readonly Query[],
  wrong: (i: number) => boolean = () => false,
): Promise<{ chosen: number }> {
  let chosen = 0;
  for (const [i, q] of sessions.entries()) {
    const who = caller(tenant, `run-${tenant}-${i}`);
    const query = clipQuery(q.query);
    const hits = await search(opened, learning, who, query);
    learning.remember(who, query, hits);
    const gold = q.gold.map((g) => opened.aliasOf.get(g) ?? g).filter((g) => hits.includes(g));
    const pick = wrong(i) ? hits.find((h) => !gold.includes(h)) : gold[0];
    if (pick === undefined) continue;
    await learning.chosen(who, pick, "selected");
    chosen++;
  }
  await learning.settled(tenant);
  return { chosen };
}

async function measure(opened: HybridCatalog, learning: Learning, tenant: string, queries: readonly Query[]) {
  const sum = new MetricsSum();
  for (const q of queries)
    sum.add(
      q.gold.map((g) => opened.aliasOf.get(g) ?? g),
      await search(opened, learning, caller(tenant), clipQuery(q.query)),
    );
  return sum.average();
}

/** Seeded choice of which sessions choose wrong (the same on every run). */
function seededWrong(share: number): (i: number) => boolean {
  return (i) => {
    let x = (i + 1) * 2654435761;
    x = (x ^ (x >>> 15)) >>> 0;
    return (x % 1000) / 1000 < share;
  };
}

async function publicSet(set: string, embedder: Embedder, rows: (string | number)[][]) {
  const t0 = performance.now();
  const opened = await openHybrid([`${set}_catalog.jsonl`], embedder);
  const learning = new Learning({
    db: opened.db,
    writer: new LocalWriter(opened.db),
    config: LEARNING,
    embedder,
  });
  const every = set === "metatool" ? METATOOL_EVERY : 1;
  const indexed = readQueries(`${set}_queries.jsonl`)
    .map((q, i) => ({ q, i }))
    .filter(({ i }) => i % every === 0);
  let even = indexed.filter(({ i }) => i % 2 === 0).map(({ q }) => q);
  let odd = indexed.filter(({ i }) => i % 2 === 1).map(({ q }) => q);
  if (TUNE) {
    // Choosing settings: learn from every other even request, score on the other even ones.
    odd = even.filter((_, k) => k % 2 === 1);
    even = even.filter((_, k) => k % 2 === 0);
  }
  const label = (n: number) => (every > 1 ? `${n} (1 in ${every})` : `${n}`);
  const row = (what: string, m: { r1: number; r5: number; n: number }, sessions: number | string) => {
    rows.push([set, what, `${sessions}`, label(m.n), m.r1, m.r5]);
    console.error(`${set} | ${what} | R@1 ${m.r1.toFixed(3)} | R@5 ${m.r5.toFixed(3)}`);
  };

  const none = await measure(opened, learning, "curve", odd);
  row("no learning", none, 0);
  // The learning curve: one tenant replays the even half in three steps.
  let done = 0;
  let chosen = 0;
  for (const share of [0.1, 0.5, 1]) {
    const upTo = Math.round(even.length * share);
    chosen += (await replay(opened, learning, "curve", even.slice(done, upTo))).chosen;
    done = upTo;
    row(
      `after ${share * 100} % of the sessions (${chosen} choices)`,
      await measure(opened, learning, "curve", odd),
      upTo,
    );
  }
  if (CURVE_ONLY) {
    await opened.close();
    return;
  }
  // 20 % of the choices wrong (another hit than the gold tool), a tenant of its own.
  await replay(opened, learning, "noisy", even, seededWrong(WRONG_SHARE));
  row(`${WRONG_SHARE * 100} % of choices wrong`, await measure(opened, learning, "noisy", odd), even.length);
  // A cold tenant reads no one's lessons: the very answers of no learning.
  const cold = await measure(opened, learning, "cold", odd);
  row("a cold tenant (others learned)", cold, 0);
  if (cold.r1 !== none.r1 || cold.r5 !== none.r5) throw new Error(`${set}: a cold tenant's results changed`);
  await renamedMidway(set, opened, learning, even, odd, rows, label);
  await opened.close();
  console.error(`${set}: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/**
 * Half the sessions replayed, then the 20 most chosen tools renamed (registered again under a new
 * name, the old one gone): their lessons name a tool that no longer exists, so they lift nothing
 * until the second half of the sessions, choosing the new names, teaches them again.
 */
async function renamedMidway(
  set: string,
  opened: HybridCatalog,
  learning: Learning,
  even: readonly Query[],
  odd: readonly Query[],
  rows: (string | number)[][],
  label: (n: number) => string,
) {
  const half = Math.round(even.length / 2);
  await replay(opened, learning, "renamed", even.slice(0, half));
  const counts = new Map<string, number>();
  for (const q of even.slice(0, half))
    for (const g of q.gold)
      counts.set(opened.aliasOf.get(g) ?? g, (counts.get(opened.aliasOf.get(g) ?? g) ?? 0) + 1);
  const renamed = new Map(
    [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([name]) => [name, `${name}_renamed`]),
  );
  // Each source registered again whole, its renamed tools under their new names.
  const bySource = new Map<string, ToolInput[]>();
  for (const t of opened.registry.all()) {
    const inputs = bySource.get(t.source) ?? [];
    inputs.push({
      name: renamed.get(t.name) ?? t.name,
      description: t.description,
      argsSchema: t.argsSchema,
      tags: [...t.tags],
    });
    bySource.set(t.source, inputs);
  }
  for (const [source, inputs] of bySource)
    await opened.registry.register(source, inputs, { replaceSource: true });
  await opened.index.ready();
  await opened.semantic?.settled();
  const rename = (q: Query): Query => ({
    ...q,
    gold: q.gold.map((g) => renamed.get(opened.aliasOf.get(g) ?? g) ?? opened.aliasOf.get(g) ?? g),
  });
  const touched = odd.filter((q) => q.gold.some((g) => renamed.has(opened.aliasOf.get(g) ?? g))).map(rename);
  rows.push([
    set,
    "renamed tools: no learning",
    "0",
    label(touched.length),
    ...pair(await measure(opened, learning, "cold-renamed", touched)),
  ]);
  rows.push([
    set,
    "renamed tools: right after the rename",
    `${half}`,
    label(touched.length),
    ...pair(await measure(opened, learning, "renamed", touched)),
  ]);
  await replay(opened, learning, "renamed", even.slice(half).map(rename));
  rows.push([
    set,
    "renamed tools: after the second half",
    `${even.length}`,
    label(touched.length),
    ...pair(await measure(opened, learning, "renamed", touched)),
  ]);
}

const pair = (m: { r1: number; r5: number }) => [m.r1, m.r5];

/** What learning costs: search overhead with a full tenant, and the bytes 100,000 lessons take. */
async function cost(embedder: Embedder, rows: (string | number)[][]) {
  const opened = await openHybrid(["metatool_catalog.jsonl"], embedder);
  const learning = new Learning({
    db: opened.db,
    writer: new LocalWriter(opened.db),
    config: DEFAULTS.learning,
    embedder,
  });
  const queries = readQueries("metatool_queries.jsonl").filter((_, i) => i % 2 === 0);
  const before = statSync(opened.db.name).size;
  const started = performance.now();
  const lessons = 100_000;
  for (let i = 0; i < lessons; i++) {
    const q = queries[i % queries.length] as Query;
    const who = caller("big", `r${i}`);
    const tool = opened.aliasOf.get(q.gold[0] as string) ?? (q.gold[0] as string);
    learning.remember(who, clipQuery(q.query), [tool]);
    await learning.chosen({ ...who, userId: `u${i % 50}` }, tool, "selected");
  }
  const writeMs = performance.now() - started;
  opened.db.pragma("wal_checkpoint(TRUNCATE)");
  const bytes = statSync(opened.db.name).size - before;
  const embedStarted = performance.now();
  await learning.settled("big");
  const embedMs = performance.now() - embedStarted;
  // A server started again: the model is read with its stored vectors, nothing embedded.
  const restarted = new Learning({
    db: opened.db,
    writer: new LocalWriter(opened.db),
    config: DEFAULTS.learning,
    embedder,
  });
  const readStarted = performance.now();
  await restarted.settled("big");
  const readMs = performance.now() - readStarted;
  const sample = readQueries("metatool_queries.jsonl")
    .filter((_, i) => i % 2 === 1)
    .slice(0, 400);
  const times = async (tenant: string) => {
    const out: number[] = [];
    for (const q of sample) {
      const query = clipQuery(q.query);
      const prepared = opened.index.prepare({ query, limit: 10 });
      const evidence = opened.semantic && (await opened.semantic.evidence(opened.index.meaningOf(prepared)));
      const t = performance.now();
      const learned = await learning.evidence(caller(tenant), query, evidence?.vectors ?? []);
      opened.index.searchPrepared(prepared, { semantic: evidence, learned });
      out.push(performance.now() - t);
    }
    return out.sort((a, b) => a - b);
  };
  const cold = await times("cold");
  const full = await times("big");
  const p = (xs: number[], q: number) => xs[Math.floor(q * (xs.length - 1))] as number;
  const rowsLearned = (await learning.show("big")).length;
  rows.push([
    "cost",
    `${lessons} lessons → ${rowsLearned} learned requests`,
    "",
    "",
    `${(bytes / 1e6).toFixed(1)} MB`,
    `${(lessons / (writeMs / 1000)).toFixed(0)} lessons/s`,
  ]);
  rows.push([
    "cost",
    "full tenant's model read, s: embedding every request / after a restart (stored vectors)",
    "",
    `${rowsLearned}`,
    (embedMs / 1000).toFixed(2),
    (readMs / 1000).toFixed(2),
  ]);
  rows.push([
    "cost",
    "search after evidence, p50 / p99 ms: no lessons",
    "",
    `${sample.length}`,
    p(cold, 0.5).toFixed(2),
    p(cold, 0.99).toFixed(2),
  ]);
  rows.push([
    "cost",
    "search after evidence, p50 / p99 ms: full tenant",
    "",
    `${sample.length}`,
    p(full, 0.5).toFixed(2),
    p(full, 0.99).toFixed(2),
  ]);
  await opened.close();
}

const embedder = await Embedder.open(BENCH_MODEL_DIR);
const rows: (string | number)[][] = [];
try {
  if (!process.argv.includes("--cost-only")) for (const set of SETS) await publicSet(set, embedder, rows);
  if (!process.argv.includes("--no-cost")) await cost(embedder, rows);
} finally {
  await embedder.close();
}
console.log(table([["set", "run", "sessions", "odd requests", "R@1", "R@5"], ...rows]));
