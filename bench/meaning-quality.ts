/**
 * What load does to the answers themselves, against `node bin/wayfind.js serve` with no flags:
 *   1. Quality under load: the held-out requests (the team's MCP requests, ToolBench's and MetaTool's
 *      odd halves) over the public catalogs together (3,500 tools, each once), sent one at a time to
 *      one server and by 32 callers at once to another (both restarted on the same stored vectors,
 *      nothing asked before): R@5 of each set and the share of answers each tier read, side by side.
 *   2. Repeatable answers on a busy machine: while other processes keep every core busy, the same
 *      2,000 requests (never seen before) sent twice, one at a time, over 10,000 tools: how many
 *      answers differ.
 *   3. A start under full CPU contention, then quiet: a server embeds the 808 MCP tools while every
 *      core is busy and 4 callers search; the contention stops; each second after, the share of
 *      answers the model read (and any meaning: the model's or its static tier's).
 * Usage: node --import tsx bench/meaning-quality.ts [--tools N] [--quiet-seconds S] [--only 1,2,3]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseCatalogFile } from "../src/discovery/index.ts";
import {
  clipQuery,
  DATA_DIR,
  PUBLIC_DUMP,
  publicCatalog,
  type Query,
  readQueries,
  writeCatalogFiles,
} from "./lib/discovery-data.ts";
import { prepareWayfind, printAligned, type ServerProcess } from "./lib/grpc-bench-support.ts";
import {
  busyMachine,
  FreshRequests,
  ms,
  pct,
  startWayfind,
  TENANT,
  vectorsReady,
  writeConfigs,
} from "./lib/meaning-bench.ts";
import { type Answer, type LoadPlan, meaningLoad, summary } from "./lib/meaning-client.ts";
import { MetricsSum } from "./search-quality-eval.ts";

const { values: flags } = parseArgs({
  options: {
    tools: { type: "string", default: "10000" },
    "quiet-seconds": { type: "string", default: "15" },
    only: { type: "string", default: "1,2,3" },
  },
  strict: true,
});
const SECTIONS = new Set(flags.only.split(","));

const work = mkdtempSync(join(tmpdir(), "wayfind-meaning-quality-"));
await prepareWayfind(process.cwd());
writeConfigs(work, Number(flags.tools));
const fresh = new FreshRequests();
const servers = new Set<ServerProcess>();
const start = async (config: string, dataDir: string) => {
  const server = await startWayfind(work, config, dataDir);
  servers.add(server);
  return server;
};
const stop = async (server: ServerProcess) => {
  await server.stop();
  servers.delete(server);
};
const plan = (
  server: ServerProcess,
  requests: readonly string[],
  callers: number,
  durationS = 3_600,
  keepTop = 0,
) =>
  ({
    port: server.port,
    tenant: TENANT,
    requests,
    callers,
    durationS,
    healthRate: 0,
    keepTop,
  }) satisfies LoadPlan;

/** `tools` as catalog files in a folder of `work`, and a config beside them naming them. */
function catalogConfig(name: string, tools: ReturnType<typeof publicCatalog>): string {
  mkdirSync(join(work, name));
  const catalogs = writeCatalogFiles(join(work, name), tools).replaceAll("path: ", `path: ${name}/`);
  writeFileSync(join(work, `${name}.yaml`), catalogs);
  return `${name}.yaml`;
}

/** 1. The held-out sets one at a time and 32 callers at once, on servers that asked nothing before. */
async function qualityUnderLoad(rows: string[][]): Promise<void> {
  const tools = publicCatalog();
  const aliasOf = new Map<string, string>();
  for (const tool of tools)
    for (const alias of tool.aliases ?? [])
      aliasOf.set(alias, tool.namespace ? `${tool.namespace}.${tool.name}` : tool.name);
  const sets: [string, Query[]][] = [
    ["team MCP requests", readQueries("mcp_requests.jsonl")],
    ["ToolBench odd half", readQueries("toolbench_queries.jsonl").filter((_, i) => i % 2 === 1)],
    // One request in five of the odd half (MetaTool's file holds 21,041).
    ["MetaTool odd half, 1 in 5", readQueries("metatool_queries.jsonl").filter((_, i) => i % 10 === 1)],
  ];
  const requests = [...new Set(sets.flatMap(([, queries]) => queries.map((q) => clipQuery(q.query))))];
  const config = catalogConfig("public", tools);
  // Vectors stored once; each run below restarts on them.
  const first = await start(config, "data-public");
  await vectorsReady(first);
  await stop(first);
  for (const [label, callers] of [
    ["one at a time", 1],
    ["32 callers at once", 32],
  ] as const) {
    const server = await start(config, "data-public");
    await vectorsReady(server);
    const outcome = await meaningLoad(plan(server, requests, callers, 3_600, 5), work);
    await stop(server);
    const byRequest = new Map(outcome.answers.map((a) => [a.request, a]));
    for (const [set, queries] of sets) {
      const sum = new MetricsSum();
      const answers = queries.map((q) => byRequest.get(clipQuery(q.query)));
      queries.forEach((q, i) => {
        sum.add(
          q.gold.map((g) => aliasOf.get(g) ?? g),
          [...(answers[i]?.top ?? [])],
        );
      });
      const s = summary({ ...outcome, answers: answers.filter((a): a is Answer => a !== undefined) });
      rows.push([
        set,
        label,
        `${queries.length}`,
        sum.average().r5.toFixed(3),
        pct(s.model),
        pct(s.static),
        pct(s.none),
      ]);
    }
    const s = summary(outcome);
    rows.push([
      "(all requests)",
      label,
      `${s.answers}`,
      "",
      "",
      "",
      "",
      `${s.perSecond.toFixed(0)}/s, p99 ${ms(s.p99)} ms`,
    ]);
  }
}

/** 2. The same requests twice, one at a time, while other processes keep every core busy. */
async function repeatable(rows: string[][]): Promise<void> {
  const busy = busyMachine();
  try {
    const server = await start("hybrid.yaml", "data-hybrid");
    await vectorsReady(server);
    const requests = fresh.take(2_000);
    const passes = [
      await meaningLoad(plan(server, requests, 1, 3_600, 10), work),
      await meaningLoad(plan(server, requests, 1, 3_600, 10), work),
    ];
    await stop(server);
    const [first, second] = passes.map((o) => new Map(o.answers.map((a) => [a.request, a.top.join("\n")])));
    const differ = requests.filter((r) => first?.get(r) !== second?.get(r)).length;
    passes.forEach((outcome, i) => {
      const s = summary(outcome);
      rows.push([
        `pass ${i + 1}`,
        `${s.answers}`,
        pct(s.model),
        pct(s.static),
        pct(s.none),
        ms(s.p50),
        ms(s.p99),
        i === 1 ? `${differ}` : "",
      ]);
    });
  } finally {
    await busy.stop();
  }
}

/** 3. A start under full CPU contention, then quiet: each second's shares once it is quiet. */
async function afterContention(rows: string[][]): Promise<void> {
  const mcpTools = ["mcp_catalog.jsonl", "livemcpbench_catalog.jsonl"].flatMap(
    (file) => parseCatalogFile(join(DATA_DIR, file), PUBLIC_DUMP).tools,
  );
  // The two catalogs share some servers: the first of each name.
  const byName = new Map<string, (typeof mcpTools)[number]>();
  for (const tool of mcpTools)
    if (!byName.has(`${tool.namespace}.${tool.name}`)) byName.set(`${tool.namespace}.${tool.name}`, tool);
  const config = catalogConfig("mcp", [...byName.values()]);
  const contention = busyMachine();
  let server: ServerProcess;
  try {
    server = await start(config, "data-mcp");
    const searching = meaningLoad(plan(server, fresh.take(4_000), 4, 5), work);
    await vectorsReady(server);
    await searching;
  } finally {
    await contention.stop();
  }
  const quietS = Number(flags["quiet-seconds"]);
  const after = await meaningLoad(plan(server, fresh.take(400 * quietS), 4, quietS), work);
  await stop(server);
  for (let second = 0; second < quietS; second++) {
    const inSecond = after.answers.filter((a) => a.at >= second * 1_000 && a.at < (second + 1) * 1_000);
    const share = (tier: Answer["tier"]) =>
      inSecond.filter((a) => a.tier === tier).length / Math.max(1, inSecond.length);
    rows.push([
      `${second}–${second + 1} s`,
      `${inSecond.length}`,
      pct(share("model")),
      pct(share("model") + share("static")),
    ]);
  }
}

const quality: string[][] = [];
const repeat: string[][] = [];
const quiet: string[][] = [];
try {
  if (SECTIONS.has("1")) await qualityUnderLoad(quality);
  if (SECTIONS.has("2")) await repeatable(repeat);
  if (SECTIONS.has("3")) await afterContention(quiet);
} finally {
  for (const server of servers) await server.stop();
  rmSync(work, { recursive: true, force: true });
}

if (SECTIONS.has("1")) {
  console.log(
    "\n1. Held-out requests over the public catalogs together, one at a time and 32 callers at once (a server each, nothing asked before)\n",
  );
  printAligned(
    [
      "set",
      "sent",
      "requests",
      "R@5",
      "read by the model",
      "by the static tier",
      "by words only",
      "throughput",
    ],
    quality,
    new Set([2, 3, 4, 5, 6]),
  );
}
if (SECTIONS.has("2")) {
  console.log(
    `\n2. The same 2,000 requests twice, one at a time, over ${flags.tools} tools, while other processes keep every core busy\n`,
  );
  printAligned(
    [
      "pass",
      "answers",
      "read by the model",
      "by the static tier",
      "by words only",
      "p50 ms",
      "p99 ms",
      "answers that differ",
    ],
    repeat,
    new Set([1, 2, 3, 4, 5, 6, 7]),
  );
}
if (SECTIONS.has("3")) {
  console.log(
    "\n3. After a start under full CPU contention (808 MCP tools embedded, 4 callers searching), once the machine is quiet: 4 callers\n",
  );
  printAligned(
    ["since quiet", "answers", "read by the model", "with meaning (model or static tier)"],
    quiet,
    new Set([1, 2, 3]),
  );
}
