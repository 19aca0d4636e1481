/**
 * Search latency on a 10,000-tool catalog grown from the shared catalogs (copies get a distinct
 * namespace), next to a raw FTS5 MATCH on the same database; plus indexing time and RSS.
 * Usage: node --import tsx bench/search-speed.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { discoveryMigrations, ToolCatalog } from "../src/discovery/index.ts";
import { splitWords } from "../src/discovery/text.ts";
import { openDatabase } from "../src/store/database.ts";
import {
  clipQuery,
  GROW_CATALOGS,
  growCatalog,
  readQueries,
  requireData,
  sample,
  table,
} from "./lib/discovery-data.ts";

function percentiles(samples: number[]): [number, number, number] {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  return [at(0.5), at(0.95), at(0.99)];
}

/** Per-call latencies over `rounds` passes, and per-query best of those passes (robust to a loaded host). */
function time(
  items: readonly string[],
  fn: (q: string) => unknown,
  rounds = 3,
  warmUp = 50,
): number[] & { best: number[] } {
  for (const q of items.slice(0, warmUp)) fn(q);
  const out: number[] = [];
  const best = new Array<number>(items.length).fill(Number.POSITIVE_INFINITY);
  for (let r = 0; r < rounds; r++)
    items.forEach((q, i) => {
      const t0 = process.hrtime.bigint();
      fn(q);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      out.push(ms);
      best[i] = Math.min(best[i] ?? ms, ms);
    });
  return Object.assign(out, { best });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-speed-"));
  const db = openDatabase(join(dir, "wayfind.db"), discoveryMigrations);
  const catalog = new ToolCatalog(db);
  const tools = growCatalog();

  let t0 = performance.now();
  const added = (await catalog.register("bench", tools)).added;
  const indexMs = performance.now() - t0;
  t0 = performance.now();
  catalog.search({ query: "warm up the in-memory ranker" });
  const rankerBuildMs = performance.now() - t0;
  t0 = performance.now();
  const again = await catalog.register("bench", tools);
  const reregisterMs = performance.now() - t0;
  t0 = performance.now();
  const restarted = new ToolCatalog(db);
  const restartMs = performance.now() - t0;
  if (restarted.size !== added) throw new Error("restart lost tools");

  const queries = [
    ...sample(readQueries("metatool_queries.jsonl"), 400),
    ...sample(readQueries("toolbench_queries.jsonl"), 200),
  ].map((q) => clipQuery(q.query));
  const names = sample(
    tools.map((t) => t.name),
    600,
  );
  const patterns = sample(
    tools.map((t) => `${splitWords(t.name).slice(-2).join("_")}`),
    300,
  ).flatMap((w) => [w, `^${w.split("_")[0]}.*`]);

  const raw = db.prepare<[string], { rowid: number }>(
    "SELECT rowid FROM discovery_tools_fts WHERE discovery_tools_fts MATCH ? ORDER BY rank LIMIT 8",
  );
  // The raw baseline gets the same words, OR-ed (the widening most natural-language queries need).
  const rawQuery = (q: string) => [...new Set(splitWords(q))].map((w) => `"${w}"`).join(" OR ") || '""';

  // Regex searches right after a change, while the literal index is still being built between calls
  // (it used to be built inside the first one: ~1 s at 10,000 tools). Not timed: the ranker rebuild.
  const afterChange: number[] = [];
  for (const [i, q] of patterns.slice(0, 5).entries()) {
    const edited = tools[i] as (typeof tools)[number];
    await catalog.register("bench", [{ ...edited, description: `${edited.description ?? ""} (edited)` }]);
    catalog.search({ query: "rebuild the in-memory index" });
    const t0 = performance.now();
    catalog.search({ query: q, type: "regex" });
    afterChange.push(performance.now() - t0);
  }
  const firstRegex = Object.assign(afterChange, { best: afterChange });
  await catalog.settled();

  const fts = time(queries, (q) => catalog.search({ query: q }));
  const rawFts = time(queries, (q) => raw.all(rawQuery(q)));
  const regex = time(patterns, (q) => catalog.search({ query: q, type: "regex" }));
  const exact = time(names, (q) => catalog.search({ query: q, type: "exact" }));
  const visible = time(queries, (q) =>
    catalog.search({ query: q, isVisible: (t) => !t.name.startsWith("copy2.") }),
  );
  // Typos seen for the first time: each pays the fuzzy expansion of its unknown word once (it is
  // memoised after), so they get one pass and no warm-up. Two letters swapped in a name word.
  const typos = sample(
    [...new Set(tools.flatMap((t) => splitWords(t.name)).filter((w) => /^[a-z]{6,}$/.test(w)))],
    600,
  ).map((w) => `${w.slice(0, 2)}${w[3]}${w[2]}${w.slice(4)}`);
  const firstTypos = time(typos, (q) => catalog.search({ query: q }), 1, 0);
  const short = queries.filter((q) => q.length <= 80);
  const ftsShort = time(short, (q) => catalog.search({ query: q }));
  const rawShort = time(short, (q) => raw.all(rawQuery(q)));

  const row = (what: string, s: number[] & { best: number[] }) => [
    what,
    `${s.length}`,
    ...percentiles(s).map((v) => v.toFixed(3)),
    ...percentiles(s.best).map((v) => v.toFixed(3)),
  ];
  console.log(
    `catalog: ${added} tools (from ${GROW_CATALOGS.length} shared catalogs, copies in namespaces copyN)`,
  );
  console.log(
    `host: ${os.cpus().length} CPUs, load average ${os.loadavg()[0]?.toFixed(1)} (latencies inflate on a busy host)\n`,
  );
  console.log(
    table([
      ["search (ms)", "calls", "p50", "p95", "p99", "best-of-3 p50", "p95", "p99"],
      row("wayfind fts (all queries)", fts),
      row("raw FTS5 MATCH OR, same words", rawFts),
      row("wayfind fts (queries <= 80 chars)", ftsShort),
      row("raw FTS5 MATCH (queries <= 80 chars)", rawShort),
      row("wayfind fts with isVisible filter", visible),
      row("wayfind fts, typos never seen (1 pass)", firstTypos),
      row("wayfind regex", regex),
      row("wayfind regex, first after a change (1 pass)", firstRegex),
      row("wayfind exact", exact),
    ]),
  );
  console.log();
  console.log(
    table([
      ["operation", "ms"],
      [`register ${added} tools (validate, hash, insert, FTS5 triggers)`, indexMs.toFixed(0)],
      ["build in-memory ranker after the change", rankerBuildMs.toFixed(0)],
      [`re-register unchanged (${again.unchanged} unchanged)`, reregisterMs.toFixed(1)],
      ["restart: new catalog on the same DB (load + ranker)", restartMs.toFixed(0)],
      ["RSS (MB)", (process.memoryUsage().rss / 1e6).toFixed(0)],
    ]),
  );
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

requireData("bench/search-speed.ts");
await main();
