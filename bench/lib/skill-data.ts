/** Synthetic, deterministic skill packs for the skills benchmarks (seeded PRNG). */
import type { Caller } from "../../src/caller/caller.ts";
import type { PackFile, SkillLibrary } from "../../src/skills/index.ts";

export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const VERBS =
  "open close list create delete update sync export import retry paginate deploy rollback migrate verify rotate triage bisect download upload fill login refresh scan index archive restore monitor notify approve merge".split(
    " ",
  );
export const NOUNS =
  "pull_request issue invoice order payment ticket user account session token cursor page report file bucket table column index schema cluster pod service queue webhook secret certificate build pipeline release branch commit form".split(
    " ",
  );
export const AREAS =
  "github gitlab stripe jira slack postgres mysql kubernetes aws gcp azure s3 browser http oauth ci docker terraform salesforce zendesk shopify".split(
    " ",
  );
const FILLER =
  "carefully check confirm the response status before continuing and record results then wait for completion ensure values match expected output handle errors gracefully using documented limits".split(
    " ",
  );

export function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)] as T;
}

export function sentence(rand: () => number, words: number): string {
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

export function packFiles(seed: number, count: number, offset: number, perFile = 500): PackFile[] {
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

export const BENCH_CALLER: Caller = {
  tenantId: "t1",
  projectId: "p1",
  userId: "u",
  sessionId: "s",
  runId: "r",
  entitlements: [],
  narrowToTools: [],
};

/** 50,000 skills: 40k global, 5k in tenant t1, 5k in project t1/p1; returns their names. */
export function load50k(service: SkillLibrary): string[] {
  const packs = [
    {
      pack: "global",
      scope: { kind: "global", tenantId: "", projectId: "" },
      files: packFiles(1, 40_000, 0),
    },
    {
      pack: "tenant",
      scope: { kind: "tenant", tenantId: "t1", projectId: "" },
      files: packFiles(2, 5_000, 40_000),
    },
    {
      pack: "project",
      scope: { kind: "project", tenantId: "t1", projectId: "p1" },
      files: packFiles(3, 5_000, 45_000),
    },
  ] as const;
  for (const pack of packs) service.loadSkillPack(pack);
  return packs.flatMap((pack) =>
    pack.files.flatMap((file) =>
      file.content
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { name: string }).name),
    ),
  );
}

/** 1–3 word capability queries ("open pull request github"). */
export function searchQueries(seed: number, count: number): string[] {
  const rand = prng(seed);
  return Array.from({ length: count }, () => {
    const n = 1 + Math.floor(rand() * 3);
    const parts = [pick(rand, VERBS), pick(rand, NOUNS).replace("_", " "), pick(rand, AREAS)];
    return parts.slice(0, n).join(" ");
  });
}

/** A list item at its limit (4,000 characters) of e-mail addresses: the slowest skill text to redact. */
const CRAFTED_ITEM = "mail a.b@c.de or x@y.io now ".repeat(139);

/**
 * What a tenant's admin may load to make skill calls expensive (issue 42), as pack files:
 * - `big`: ten skills of about a megabyte each, every list at 80 items of CRAFTED_ITEM;
 * - `common`: `count` skills that all hold the same 32 words, so a task of those words matches each.
 */
export function craftedPacks(count: number): { big: PackFile[]; common: PackFile[]; commonWords: string[] } {
  const many = Array.from({ length: 80 }, () => CRAFTED_ITEM);
  const big = Array.from({ length: 10 }, (_, i) => ({
    path: `s${i}.skill.json`,
    content: JSON.stringify({
      name: `big.procedure_${i}`,
      title: "big crafted procedure",
      trigger: "when handling a big crafted procedure",
      description: CRAFTED_ITEM,
      steps: many,
      preconditions: many,
      failure_modes: many,
    }),
  }));
  const commonWords = Array.from({ length: 32 }, (_, i) => `word${String.fromCharCode(97 + (i % 26))}${i}`);
  const perFile = 2_000;
  const common: PackFile[] = [];
  for (let start = 0; start < count; start += perFile) {
    const lines = Array.from({ length: Math.min(perFile, count - start) }, (_, i) =>
      JSON.stringify({
        name: `common.skill_${start + i}`,
        title: `common ${start + i}`,
        trigger: commonWords.join(" "),
        steps: ["go"],
      }),
    );
    common.push({ path: `part-${start / perFile}.skill.jsonl`, content: `${lines.join("\n")}\n` });
  }
  return { big, common, commonWords };
}
