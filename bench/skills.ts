/**
 * Skills benchmark: `node --import tsx bench/skills.ts`.
 * searchSkills latency at 50,000 skills, loading and reloading a 10,000-skill pack, and the token budget
 * of getRelevantSkills over 1,000 random tasks. Data is synthetic and deterministic (seeded PRNG).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Caller } from "../src/caller/caller.ts";
import { type PackFile, SkillService, skillsMigrations } from "../src/skills/index.ts";
import { openDatabase } from "../src/store/database.ts";
import { estimateTokens } from "../src/text/tokens.ts";

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VERBS =
  "open close list create delete update sync export import retry paginate deploy rollback migrate verify rotate triage bisect download upload fill login refresh scan index archive restore monitor notify approve merge".split(
    " ",
  );
const NOUNS =
  "pull_request issue invoice order payment ticket user account session token cursor page report file bucket table column index schema cluster pod service queue webhook secret certificate build pipeline release branch commit form".split(
    " ",
  );
const AREAS =
  "github gitlab stripe jira slack postgres mysql kubernetes aws gcp azure s3 browser http oauth ci docker terraform salesforce zendesk shopify".split(
    " ",
  );
const FILLER =
  "carefully check confirm the response status before continuing and record results then wait for completion ensure values match expected output handle errors gracefully using documented limits".split(
    " ",
  );

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)] as T;
}

function sentence(rand: () => number, words: number): string {
  return Array.from({ length: words }, () => pick(rand, FILLER)).join(" ");
}

function makeSkill(rand: () => number, i: number): Record<string, unknown> {
  const verb = pick(rand, VERBS);
  const noun = pick(rand, NOUNS);
  const area = pick(rand, AREAS);
  return {
    name: `bench.${area}.${verb}_${noun}_${i}`,
    title: `${verb} ${noun.replace("_", " ")} in ${area}`,
    trigger: `when you need to ${verb} a ${noun.replace("_", " ")} on ${area} ${sentence(rand, 6)}`,
    description: sentence(rand, 15),
    task_type: pick(rand, ["browser", "api", "code", "domain", "unknown"]),
    tags: [area, verb, noun],
    steps: Array.from({ length: 3 + Math.floor(rand() * 6) }, () =>
      sentence(rand, 8 + Math.floor(rand() * 20)),
    ),
    preconditions: [sentence(rand, 10)],
    failure_modes: [sentence(rand, 12), sentence(rand, 12)],
  };
}

function packFiles(seed: number, count: number, offset: number, perFile = 500): PackFile[] {
  const rand = prng(seed);
  const files: PackFile[] = [];
  for (let start = 0; start < count; start += perFile) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(count, start + perFile); i++)
      lines.push(JSON.stringify(makeSkill(rand, offset + i)));
    files.push({
      path: `part-${String(start / perFile).padStart(4, "0")}.skill.jsonl`,
      content: `${lines.join("\n")}\n`,
    });
  }
  return files;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function time<T>(fn: () => T): [T, number] {
  const start = performance.now();
  const value = fn();
  return [value, performance.now() - start];
}

const CALLER: Caller = {
  tenantId: "t1",
  projectId: "p1",
  userId: "u",
  sessionId: "s",
  runId: "r",
  entitlements: [],
  narrowToTools: [],
};

const rows: [string, string, string][] = [];
const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-skills-"));
try {
  // --- 50,000 skills: 40k global, 5k tenant, 5k project -------------------------------------------
  const db = openDatabase(join(dir, "search.db"), skillsMigrations);
  const service = new SkillService({
    db,
    packLimits: { maxSkills: 50_000, maxPackBytes: 128 * 1024 * 1024 },
  });
  service.loadSkillPack({
    pack: "global",
    scope: { kind: "global", tenantId: "", projectId: "" },
    files: packFiles(1, 40_000, 0),
  });
  service.loadSkillPack({
    pack: "tenant",
    scope: { kind: "tenant", tenantId: "t1", projectId: "" },
    files: packFiles(2, 5_000, 40_000),
  });
  service.loadSkillPack({
    pack: "project",
    scope: { kind: "project", tenantId: "t1", projectId: "p1" },
    files: packFiles(3, 5_000, 45_000),
  });
  const rand = prng(42);
  const queries = Array.from({ length: 3000 }, () => {
    const n = 1 + Math.floor(rand() * 3);
    const parts = [pick(rand, VERBS), pick(rand, NOUNS).replace("_", " "), pick(rand, AREAS)];
    return parts.slice(0, n).join(" ");
  });
  for (const q of queries.slice(0, 200)) service.searchSkills(CALLER, { query: q }); // warm-up
  for (const [label, type, count] of [
    ["fts", "fts", 3000],
    ["exact", "exact", 3000],
    ["regex", "regex", 10],
  ] as const) {
    const latencies: number[] = [];
    let results = 0;
    for (const q of queries.slice(0, count)) {
      const query =
        type === "exact"
          ? `bench.github.open_issue_${Math.floor(rand() * 50_000)}`
          : type === "regex"
            ? `^bench\\.${q.split(" ")[0]}`
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
    const topK = 1 + Math.floor(rand() * 20);
    const [result, ms] = time(() => service.getRelevantSkills(CALLER, { task, topK, maxTokens }));
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
    "getRelevantSkills, 1,000 random tasks (budget 200–6000, topK 1–20)",
    `max used/budget ${(worst * 100).toFixed(1)}% (${worstLine}), over budget: ${violations}`,
    `p50 ${percentile(relevantLatencies, 50).toFixed(2)} / p99 ${percentile(relevantLatencies, 99).toFixed(2)} ms`,
  ]);
  db.close();

  // --- 10,000-skill pack: load and unchanged reload --------------------------------------------------
  const loadDb = openDatabase(join(dir, "load.db"), skillsMigrations);
  const loader = new SkillService({ db: loadDb });
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
