/**
 * Retrieval quality of SearchSkills for requests of five kinds, words alone and as a server ranks by
 * default (hybrid: words fused with meaning, the shipped model). By default over the skills catalog
 * the team wrote and its requests (data/eval/team_skills.jsonl, team_skills_requests.jsonl), so it
 * runs from a clean clone; --catalog and --requests run another pair, such as the public Agent Skills
 * catalog, which cannot be kept in the repository, with agent_skills_requests.jsonl (data/eval/README.md).
 * The catalog becomes SKILL.md folders, one pack per source repository (or one for the whole file),
 * loaded as a server loads a pack folder; every request then runs through SkillLibrary.searchSkills
 * with the evidence by meaning a server adds (semanticSkillSearch).
 * Usage: node --import tsx bench/skill-search.ts [--lexical-only] [--catalog FILE --requests FILE]
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULTS } from "../src/config/defaults.ts";
import { openDatabase } from "../src/database/sqlite.ts";
import { analyze } from "../src/search/text.ts";
import { Embedder, semanticMigrations, semanticSkillSearch } from "../src/semantic/index.ts";
import { SkillLibrary, skillsMigrations } from "../src/skills/index.ts";
import { DATA_DIR, type Query, table } from "./lib/discovery-data.ts";
import { BENCH_MODEL_DIR } from "./lib/hybrid.ts";
import { BENCH_CALLER } from "./lib/skill-data.ts";
import { MetricsSum } from "./search-quality-eval.ts";

interface CatalogSkill {
  readonly name: string;
  readonly description: string;
  readonly body: string;
  /** The repository a public skill came from; the team's skills have none and share one pack. */
  readonly source?: string;
}

type Request = Query & { readonly kind: string };

const KINDS = ["direct", "partial_name", "multi_tool", "typo", "paraphrase"] as const;
/** The API's largest page: all R@5 and MRR@20 need. */
const PAGE = 20;
const { values: args } = parseArgs({
  options: {
    "lexical-only": { type: "boolean", default: false },
    catalog: { type: "string", default: join(DATA_DIR, "team_skills.jsonl") },
    requests: { type: "string", default: join(DATA_DIR, "team_skills_requests.jsonl") },
  },
});
const LEXICAL_ONLY = args["lexical-only"];
const CATALOG = resolve(args.catalog);
const REQUESTS = resolve(args.requests);

function readLines<T>(path: string): T[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

/** Each source repository as a pack folder of `<name>/SKILL.md`; returns pack name → skill count. */
function writePacks(root: string, catalog: readonly CatalogSkill[]): Map<string, number> {
  const packs = new Map<string, number>();
  for (const skill of catalog) {
    const pack = (skill.source ?? basename(CATALOG, ".jsonl")).toLowerCase().replace(/[^a-z0-9]+/g, "-");
    const dir = join(root, pack, skill.name);
    mkdirSync(dir, { recursive: true });
    // JSON strings are YAML flow scalars: any description survives the front matter as written.
    const front = `---\nname: ${JSON.stringify(skill.name)}\ndescription: ${JSON.stringify(skill.description)}\n---\n`;
    writeFileSync(join(dir, "SKILL.md"), `${front}${skill.body}\n`);
    packs.set(pack, (packs.get(pack) ?? 0) + 1);
  }
  return packs;
}

/** Paraphrase requests that share a content word (analysed) with a gold skill's name or description. */
function leakyParaphrases(requests: readonly Request[], catalog: readonly CatalogSkill[]): string[] {
  const words = new Map(catalog.map((s) => [s.name, new Set(analyze(`${s.name} ${s.description}`))]));
  return requests
    .filter((r) => r.kind === "paraphrase")
    .filter((r) => {
      const asked = analyze(r.query);
      return r.gold.some((g) => asked.some((w) => words.get(g)?.has(w)));
    })
    .map((r) => r.id);
}

interface Ranked {
  readonly names: string[];
  readonly widened: boolean;
  readonly rewrites: number;
}

async function main(): Promise<void> {
  const started = performance.now();
  const catalog = readLines<CatalogSkill>(CATALOG);
  const requests = readLines<Request>(REQUESTS);
  const names = new Set(catalog.map((s) => s.name));
  const unknown = requests.flatMap((r) => r.gold.filter((g) => !names.has(g)).map((g) => `${r.id}: ${g}`));
  if (unknown.length > 0) throw new Error(`gold skills not in the catalog: ${unknown.join(", ")}`);
  const leaky = leakyParaphrases(requests, catalog);

  const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-skill-search-"));
  const embedder = LEXICAL_ONLY ? undefined : await Embedder.open(BENCH_MODEL_DIR);
  const db = openDatabase(join(dir, "wayfind.db"), [...skillsMigrations, ...semanticMigrations]);
  const semantic =
    embedder &&
    semanticSkillSearch({
      db,
      embedder,
      weight: DEFAULTS.toolSearch.semantic.weight,
      // The bench ranks every request by meaning: it waits for it.
      maxWaitMs: 600_000,
    });
  try {
    const packRoot = join(dir, "packs");
    const packs = writePacks(packRoot, catalog);
    // Wired as the server wires them (src/server/domain.ts): a pack load brings skill vectors up to date.
    const skills: SkillLibrary = new SkillLibrary({
      db,
      packRoots: [packRoot],
      ...(embedder ? { modelWords: embedder.words } : {}),
      onSkillsChanged: () => semantic?.catalogChanged(undefined, () => skills.embeddingTexts()),
    });
    const scope = { kind: "global", tenantId: "", projectId: "" } as const;
    for (const [pack, count] of packs) {
      const loaded = skills.loadSkillPack({ pack, path: pack, scope });
      if (loaded.skillCount !== count)
        throw new Error(`pack ${pack}: ${loaded.skillCount} of ${count} skills`);
    }
    await semantic?.settled();

    const search = async (query: string, hybrid: boolean): Promise<Ranked> => {
      const prepared = skills.prepareSearch(BENCH_CALLER, { query, limit: PAGE });
      const meaning = hybrid ? await semantic?.evidence(skills.searchMeaning(prepared)) : undefined;
      const result = skills.searchPrepared(BENCH_CALLER, prepared, { semantic: meaning });
      return {
        names: result.skills.map((s) => s.name),
        widened: result.strategy !== "and",
        rewrites: result.rewrites.length,
      };
    };
    const modes: [string, boolean][] = [["words only", false]];
    if (semantic) modes.push(["hybrid (default)", true]);
    const rows: (string | number)[][] = [
      ["mode", "kind", "requests", "R@1", "R@5", "MRR", "no hit", "widened", "rewritten"],
    ];
    for (const [mode, hybrid] of modes) {
      const ranked = new Map<string, Ranked>();
      for (const r of requests) ranked.set(r.id, await search(r.query, hybrid));
      for (const kind of ["all", ...KINDS]) {
        const group = requests.filter((r) => kind === "all" || r.kind === kind);
        const sum = new MetricsSum();
        let empty = 0;
        let widened = 0;
        let rewritten = 0;
        for (const r of group) {
          const hit = ranked.get(r.id) ?? { names: [], widened: false, rewrites: 0 };
          sum.add(r.gold, hit.names);
          if (hit.names.length === 0) empty++;
          if (hit.widened) widened++;
          if (hit.rewrites > 0) rewritten++;
        }
        const m = sum.average();
        rows.push([mode, kind, `${m.n}`, m.r1, m.r5, m.mrr, `${empty}`, `${widened}`, `${rewritten}`]);
      }
    }
    console.log(table(rows));
    console.log(
      `\n${catalog.length} skills in ${packs.size} pack(s) from ${relative(".", CATALOG)}; ${requests.length} ` +
        `requests from ${relative(".", REQUESTS)} (both: data/eval/README.md). ` +
        "R@k: share of gold skills in the top k; MRR over the top 20 (the API's " +
        "page). no hit: requests with an empty answer; widened: the AND query found nothing, so OR or " +
        "prefix ran; rewritten: typo repairs or synonyms reported.",
    );
    if (leaky.length > 0)
      console.log(`paraphrases sharing a content word with a gold skill: ${leaky.join(", ")}`);
    console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await semantic?.close();
    db.close();
    await embedder?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const missing = [CATALOG, REQUESTS].find((path) => !existsSync(path));
if (missing) {
  console.error(
    `bench/skill-search: ${missing} is missing (what it holds and where it comes from: data/eval/README.md)`,
  );
  process.exitCode = 1;
} else await main();
