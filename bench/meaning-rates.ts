/**
 * Meaning under an open-loop load: requests never seen before arrive at a fixed rate whatever the
 * answers (as a fleet's agents send them), at 10, 30, 60 and 100 a second and at twice the model's
 * capacity as measured (the most answers a second the model read at those rates), against `node
 * bin/wayfind.js serve` with no flags over 10,000 tools, vectors ready; words only at the same rates
 * beside it. Each row: answers a second, the share of answers each tier read (the model; its static
 * tier, when the model was not in time; words only), meaningful answers a second (the model's and the
 * static tier's), latency, and a trivial RPC's (Health/Check, 20 a second) in the same run.
 * Usage: node --import tsx bench/meaning-rates.ts [--tools N] [--duration S] [--rates 10,30,60,100]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { prepareWayfind, printAligned, type ServerProcess } from "./lib/grpc-bench-support.ts";
import {
  capacity,
  FreshRequests,
  ms,
  pct,
  startWayfind,
  TENANT,
  vectorsReady,
  writeConfigs,
} from "./lib/meaning-bench.ts";
import { meaningLoad, summary } from "./lib/meaning-client.ts";

const { values: flags } = parseArgs({
  options: {
    tools: { type: "string", default: "10000" },
    duration: { type: "string", default: "10" },
    rates: { type: "string", default: "10,30,60,100" },
  },
  strict: true,
});
const DURATION_S = Number(flags.duration);
const RATES = flags.rates.split(",").map(Number);

const work = mkdtempSync(join(tmpdir(), "wayfind-meaning-rates-"));
await prepareWayfind(process.cwd());
writeConfigs(work, Number(flags.tools));
const fresh = new FreshRequests();
const rows: string[][] = [];

/** Answers a second the model read, at the rates run so far (its capacity as measured). */
let byModel = 0;
let capacityNote = "";

async function atRate(server: ServerProcess, label: string, rate: number, note = ""): Promise<void> {
  const requests = fresh.take(Math.ceil(rate * DURATION_S));
  const outcome = await meaningLoad(
    { port: server.port, tenant: TENANT, requests, rate, durationS: DURATION_S, healthRate: 20, keepTop: 0 },
    work,
  );
  const s = summary(outcome);
  const hybrid = label === "hybrid";
  if (hybrid) byModel = Math.max(byModel, s.perSecond * s.model);
  rows.push([
    label,
    `${rate.toFixed(0)}${note}`,
    s.perSecond.toFixed(1),
    hybrid ? pct(s.model) : "",
    hybrid ? pct(s.static) : "",
    hybrid ? pct(s.none) : "",
    hybrid ? (s.perSecond * (s.model + s.static)).toFixed(1) : "",
    hybrid ? (s.perSecond * s.model).toFixed(1) : "",
    ms(s.p50),
    ms(s.p99),
    ms(s.healthP99),
    `${s.errors}`,
  ]);
  // The texts the model skipped are embedded in its spare time: let it have it between runs.
  await new Promise((done) => setTimeout(done, 3_000));
}

const servers: ServerProcess[] = [];
try {
  const hybrid = await startWayfind(work, "hybrid.yaml", "data-hybrid");
  servers.push(hybrid);
  await vectorsReady(hybrid);
  const atStart = await capacity(hybrid);
  for (const rate of RATES) await atRate(hybrid, "hybrid", rate);
  const overload = Math.max(1, Math.round(2 * byModel));
  await atRate(hybrid, "hybrid", overload, " (2× capacity)");
  capacityNote = `capacity: ${(overload / 2).toFixed(0)} requests/s read by the model at most above; its gauge said ${atStart.toFixed(0)} texts/s at start (32 tokens each, nothing else running)`;
  await hybrid.stop();
  servers.pop();

  const words = await startWayfind(work, "words.yaml", "data-words");
  servers.push(words);
  for (const rate of [...RATES, overload]) await atRate(words, "words only", rate);
} finally {
  for (const server of servers) await server.stop();
  rmSync(work, { recursive: true, force: true });
}

console.log(
  `\nSearchTools, open loop, requests never seen before (MetaTool), ${flags.tools} tools, ${DURATION_S} s a rate (\`node bin/wayfind.js serve\`, the load client on the same machine)\n`,
);
printAligned(
  [
    "server",
    "offered/s",
    "answers/s",
    "read by the model",
    "by the static tier",
    "by words only",
    "meaningful/s",
    "by the model/s",
    "p50 ms",
    "p99 ms",
    "Health p99 ms",
    "errors",
  ],
  rows,
  new Set([2, 3, 4, 5, 6, 7, 8, 9, 10]),
);
console.log(
  `\n${capacityNote}.\nmeaningful/s: answers read by the model or its static tier a second. The capacity is the model's ` +
    "(wayfind_semantic_capacity_texts_per_second: request texts a second at its pace lately).",
);
