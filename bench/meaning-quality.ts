/**
 * What load does to the answers themselves, against `node bin/wayfind.js serve` with no flags:
 *   1. Quality under load: the held-out requests (the team's MCP requests, ToolBench's and MetaTool's
 *      odd halves) over 10,000 tools, sent one at a time to one server and by 32 callers at once to
 *      another (both restarted on the same stored vectors, nothing asked before): R@5 of each set
 *      and the share of answers each tier read, side by side.
 *   2. Repeatable answers on a busy machine: while another process keeps every core busy, the same
 *      2,000 requests (never seen before) sent twice, one at a time: how many answers differ.
 *   3. A start under full CPU contention, then quiet: a server embeds the 808 MCP tools while every
 *      core is busy and 4 callers search; the contention stops; each second after, the share of
 *      answers the model read (and any meaning: the model's or its static tier's).
 * Usage: node --import tsx bench/meaning-quality.ts [--tools N] [--quiet-seconds S]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseCatalogFile } from "../src/discovery/index.ts";
import {
  clipQuery,
  DATA_DIR,
  growCatalog,
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
import { type Answer, meaningLoad, summary } from "./lib/meaning-client.ts";
import { MetricsSum } from "./search-quality-eval.ts";

const { values: flags } = parseArgs({
  options: {
    tools: { type: "string", default: "10000" },
    "quiet-seconds": { type: "string", default: "15" },
  },
  strict: true,
});

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

/** Tool names as registered in the grown catalog, for gold names given as aliases. */
const aliasOf = new Map<string, string>();
for (const tool of growCatalog(Number(flags.tools)))
  for (const alias of tool.aliases ?? [])
    aliasOf.set(alias, tool.namespace ? `${tool.namespace}.${tool.name}` : tool.name);

/** The held-out requests of each set (the odd halves; every team MCP request), at most `max` each. */
const sets: [string, Query[]][] = [
  ["team MCP requests", readQueries("mcp_requests.jsonl")],
  ["ToolBench odd half", readQueries("toolbench_queries.jsonl").filter((_, i) => i % 2 === 1)],
  // One request in five of the odd half (MetaTool's file holds 21,041).
  ["MetaTool odd half, 1 in 5", readQueries("metatool_queries.jsonl").filter((_, i) => i % 10 === 1)],
];

function recallAt5(queries: readonly Query[], answers: ReadonlyMap<string, Answer>) {
  const sum = new MetricsSum();
  for (const q of queries)
    sum.add(
      q.gold.map((g) => aliasOf.get(g) ?? g),
      [...(answers.get(clipQuery(q.query))?.top ?? [])],
    );
  return sum.average().r5;
}

const quality: string[][] = [];
async function sendHeldOut(server: ServerProcess, label: string, callers: number): Promise<void> {
  const requests = [...new Set(sets.flatMap(([, queries]) => queries.map((q) => clipQuery(q.query))))];
  const outcome = await meaningLoad(
    { port: server.port, tenant: TENANT, requests, callers, durationS: 3_600, healthRate: 0, keepTop: 5 },
    work,
  );
  const byRequest = new Map(outcome.answers.map((a) => [a.request, a]));
  const s = summary(outcome);
  for (const [set, queries] of sets)
    quality.push([
      set,
      label,
      `${queries.length}`,
      recallAt5(queries, byRequest).toFixed(3),
      pct(s.model),
      pct(s.static),
      pct(s.none),
      s.perSecond.toFixed(0),
      ms(s.p99),
    ]);
}

const repeat: string[][] = [];
const quiet: string[][] = [];
try {
  // 1. Quality under load (vectors stored once, then two restarts that asked nothing yet).
  const first = await start("hybrid.yaml", "data-hybrid");
  await vectorsReady(first);
  await stop(first);
  const serial = await start("hybrid.yaml", "data-hybrid");
  await vectorsReady(serial);
  await sendHeldOut(serial, "one at a time", 1);
  await stop(serial);
  const loaded = await start("hybrid.yaml", "data-hybrid");
  await vectorsReady(loaded);
  await sendHeldOut(loaded, "32 callers at once", 32);
  await stop(loaded);

  // 2. The same requests twice, one at a time, on a busy machine.
  const busy = busyMachine();
  try {
    const server = await start("hybrid.yaml", "data-hybrid");
    await vectorsReady(server);
    const requests = fresh.take(2_000);
    const plan = {
      port: server.port,
      tenant: TENANT,
      requests,
      callers: 1,
      durationS: 3_600,
      healthRate: 0,
      keepTop: 10,
    };
    const passes = [await meaningLoad(plan, work), await meaningLoad(plan, work)];
    const [a, b] = passes.map((o) => new Map(o.answers.map((x) => [x.request, x.top.join("\n")])));
    const differ = requests.filter((r) => a?.get(r) !== b?.get(r)).length;
    passes.forEach((outcome, i) => {
      const s = summary(outcome);
      repeat.push([
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
    await stop(server);
  } finally {
    await busy.stop();
  }

  // 3. A start under contention, then quiet: the 808 MCP tools, embedded while every core is busy.
  const mcpTools = ["mcp_catalog.jsonl", "livemcpbench_catalog.jsonl"].flatMap(
    (file) => parseCatalogFile(join(DATA_DIR, file), { invalidSchemas: "warn" }).tools,
  );
  // The two catalogs share some servers: the first of each name.
  const unique = [...new Map(mcpTools.reverse().map((t) => [`${t.namespace ?? ""}.${t.name}`, t])).values()];
  const mcpDir = join(work, "mcp");
  mkdirSync(mcpDir);
  writeFileSync(join(work, "mcp.yaml"), writeCatalogFiles(mcpDir, unique).replaceAll("path: ", "path: mcp/"));
  const contention = busyMachine();
  let server: ServerProcess;
  try {
    server = await start("mcp.yaml", "data-mcp");
    const warm = meaningLoad(
      {
        port: server.port,
        tenant: TENANT,
        requests: fresh.take(4_000),
        callers: 4,
        durationS: 5,
        healthRate: 0,
        keepTop: 0,
      },
      work,
    );
    await vectorsReady(server);
    await warm;
  } finally {
    await contention.stop();
  }
  const quietS = Number(flags["quiet-seconds"]);
  const after = await meaningLoad(
    {
      port: server.port,
      tenant: TENANT,
      requests: fresh.take(400 * quietS),
      callers: 4,
      durationS: quietS,
      healthRate: 0,
      keepTop: 0,
    },
    work,
  );
  const t0 = Math.min(...after.answers.map((a) => a.at));
  for (let second = 0; second < quietS; second++) {
    const inSecond = after.answers.filter(
      (a) => a.at - t0 >= second * 1_000 && a.at - t0 < (second + 1) * 1_000,
    );
    const share = (tier: Answer["tier"]) =>
      inSecond.filter((a) => a.tier === tier).length / Math.max(1, inSecond.length);
    quiet.push([
      `${second}–${second + 1} s`,
      `${inSecond.length}`,
      pct(share("model")),
      pct(share("model") + share("static")),
    ]);
  }
  await stop(server);
} finally {
  for (const server of servers) await server.stop();
  rmSync(work, { recursive: true, force: true });
}

console.log(
  `\n1. Held-out requests over ${flags.tools} tools, one at a time and 32 callers at once (a server each, nothing asked before)\n`,
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
    "answers/s",
    "p99 ms",
  ],
  quality,
  new Set([2, 3, 4, 5, 6, 7, 8]),
);
console.log(
  "\n2. The same 2,000 requests twice, one at a time, while other processes keep every core busy\n",
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
console.log(
  "\n3. After a start under full CPU contention (808 MCP tools embedded, 4 callers), once the machine is quiet: 4 callers\n",
);
printAligned(
  ["since quiet", "answers", "read by the model", "with meaning (model or static tier)"],
  quiet,
  new Set([1, 2, 3]),
);
