/**
 * Skills benchmark: `node --import tsx bench/skills.ts`.
 * searchSkills latency at 50,000 skills, loading and reloading a 10,000-skill pack, and the token budget
 * of getRelevantSkills over 1,000 random tasks. Data is synthetic and deterministic (seeded PRNG).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../src/database/sqlite.ts";
import { LIMITS } from "../src/limits.ts";
import { SkillLibrary, skillsMigrations } from "../src/skills/index.ts";
import { estimateTokens } from "../src/text/tokens.ts";
import {
  AREAS,
  BENCH_CALLER as CALLER,
  load50k,
  NOUNS,
  packFiles,
  pick,
  prng,
  searchQueries,
  sentence,
  VERBS,
} from "./lib/skill-data.ts";
import { percentile } from "./lib/stats.ts";

function time<T>(fn: () => T): [T, number] {
  const start = performance.now();
  const value = fn();
  return [value, performance.now() - start];
}

const rows: [string, string, string][] = [];
const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-skills-"));
try {
  // --- 50,000 skills: 40k global, 5k tenant, 5k project -------------------------------------------
  const db = openDatabase(join(dir, "search.db"), skillsMigrations);
  const service = new SkillLibrary({
    db,
    packLimits: { maxSkills: 50_000, maxPackBytes: 128 * 1024 * 1024 },
  });
  const names = load50k(service);
  const queries = searchQueries(42, 3000);
  const rand = prng(43);
  // The first search after a change builds the skills' word index (every scope's skills).
  const [, buildMs] = time(() => service.searchSkills(CALLER, { query: queries[0] ?? "deploy" }));
  rows.push([
    "first searchSkills after loading 50k skills (builds the word index)",
    `${buildMs.toFixed(0)} ms`,
    "",
  ]);
  for (const q of queries.slice(0, 200)) service.searchSkills(CALLER, { query: q }); // warm-up
  for (const [label, type, count] of [
    ["fts", "fts", 3000],
    ["exact", "exact", 3000],
    ["regex", "regex", 100],
  ] as const) {
    const latencies: number[] = [];
    let results = 0;
    for (const q of queries.slice(0, count)) {
      const query =
        type === "exact"
          ? (names[Math.floor(rand() * names.length)] ?? "")
          : type === "regex"
            ? `^bench\\.${pick(rand, AREAS)}\\.${pick(rand, VERBS)}_`
            : q;
      const [result, ms] = time(() => service.searchSkills(CALLER, { query, type, limit: 8 }));
      results += result.skills.length;
      latencies.push(ms);
    }
    latencies.sort((a, b) => a - b);
    const target = type === "fts" ? " (target p99 < 1 ms)" : "";
    rows.push([
      `searchSkills ${label} @50k skills, ${count} queries${target}`,
      `p50 ${percentile(latencies, 50).toFixed(3)} / p95 ${percentile(latencies, 95).toFixed(3)} / p99 ${percentile(latencies, 99).toFixed(3)} ms`,
      `avg ${(results / count).toFixed(1)} hits`,
    ]);
  }

  // --- getRelevantSkills budget --------------------------------------------------------------------
  let worst = 0;
  let worstLine = "";
  let violations = 0;
  const relevantLatencies: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const task = `Please ${pick(rand, VERBS)} the ${pick(rand, NOUNS).replace("_", " ")} in ${pick(rand, AREAS)} and ${sentence(rand, 6 + Math.floor(rand() * 30))}`;
    const maxTokens = 200 + Math.floor(rand() * 5801);
    const topK = 1 + Math.floor(rand() * LIMITS.relevantSkillsTopK.max);
    const started = performance.now();
    const result = await service.getRelevantSkills(CALLER, { task, topK, maxTokens });
    const ms = performance.now() - started;
    relevantLatencies.push(ms);
    const used = estimateTokens(result.formattedContext);
    if (used > maxTokens) violations++;
    if (used / maxTokens > worst) {
      worst = used / maxTokens;
      worstLine = `${used}/${maxTokens}`;
    }
  }
  relevantLatencies.sort((a, b) => a - b);
  rows.push([
    `getRelevantSkills, 1,000 random tasks (budget 200–6000, topK 1–${LIMITS.relevantSkillsTopK.max})`,
    `max used/budget ${(worst * 100).toFixed(1)}% (${worstLine}), over budget: ${violations}`,
    `p50 ${percentile(relevantLatencies, 50).toFixed(2)} / p99 ${percentile(relevantLatencies, 99).toFixed(2)} ms`,
  ]);
  db.close();

  // --- 10,000-skill pack: load and unchanged reload --------------------------------------------------
  const loadDb = openDatabase(join(dir, "load.db"), skillsMigrations);
  const loader = new SkillLibrary({ db: loadDb });
  const pack = packFiles(7, 10_000, 0);
  const bytes = pack.reduce((n, f) => n + f.content.length, 0);
  const scope = { kind: "global", tenantId: "", projectId: "" } as const;
  const [loaded, loadMs] = time(() => loader.loadSkillPack({ pack: "big", scope, files: pack }));
  rows.push([
    `load 10,000-skill pack (${pack.length} files, ${(bytes / 1e6).toFixed(1)} MB) (target < 3 s)`,
    `${loadMs.toFixed(0)} ms`,
    `loaded ${loaded.loaded}`,
  ]);
  const [again, reloadMs] = time(() => loader.loadSkillPack({ pack: "big", scope, files: pack }));
  rows.push([
    "reload unchanged 10,000-skill pack (target < 200 ms)",
    `${reloadMs.toFixed(0)} ms`,
    `unchanged ${again.unchanged}`,
  ]);
  const changed = packFiles(7, 10_000, 0);
  changed[0] = {
    path: changed[0]?.path ?? "",
    content: (changed[0]?.content ?? "").replace("carefully", "cautiously"),
  };
  const [partial, partialMs] = time(() => loader.loadSkillPack({ pack: "big", scope, files: changed }));
  rows.push([
    "reload with one file changed",
    `${partialMs.toFixed(0)} ms`,
    `updated ${partial.updated}, unchanged ${partial.unchanged}`,
  ]);
  loadDb.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]?.length ?? 0), 6));
const line = (r: readonly string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(" | ")} |`;
console.log(line(["benchmark", "result", "notes"]));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of rows) console.log(line(r));
