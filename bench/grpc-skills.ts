/**
 * SkillService/SearchSkills over native gRPC (h2c on loopback) at 50,000 skills, measured with ghz:
 * 32 callers (4 connections × 8 streams; target p99 < 3 ms) and one caller alone (1×1: the service
 * time without queueing). The skills (40k global, 5k tenant, 5k project; lib/skill-data.ts) are
 * written into the data dir before the server starts; the caller sees all 50,000.
 *
 * Usage: node --import tsx bench/grpc-skills.ts [--duration S] [--warmup S] [--rounds N] [--pin]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "../src/database/sqlite.ts";
import { allMigrations } from "../src/server/migrations.ts";
import { SkillLibrary } from "../src/skills/index.ts";
import {
  ensureGhz,
  type LoadResult,
  loadFlagOptions,
  loadFlags,
  medianByRps,
  prepareWayfind,
  printAligned,
  probeStatus,
  ROOT,
  runGhz,
  runWithServerCpu,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { load50k, searchQueries } from "./lib/skill-data.ts";

const { values: flags } = parseArgs({
  options: {
    ...loadFlagOptions(5, 2),
  },
  strict: true,
});
const { durationS: DURATION_S, warmupS: WARMUP_S, rounds: ROUNDS, pin: PIN, cores } = loadFlags(flags);
const TARGET_P99_MS = 3;
/**
 * 32 callers flat out (the target's shape), 32 callers sending 1,000 req/s in total (a busy fleet
 * below saturation: queueing stays short) and one caller alone (the service time).
 */
const SHAPES = [
  { connections: 4, streams: 8, rps: undefined, name: "4×8", targeted: true },
  { connections: 4, streams: 8, rps: 1000, name: "4×8 @ 1,000 req/s", targeted: false },
  { connections: 1, streams: 1, rps: undefined, name: "1×1", targeted: false },
] as const;

const work = mkdtempSync(join(tmpdir(), "wayfind-grpc-skills-"));
try {
  const ghz = await ensureGhz();
  await prepareWayfind(ROOT);
  const dataDir = join(work, "data");
  process.stderr.write("· writing 50,000 skills into the data dir\n");
  {
    const db = openDatabase(join(dataDir, "wayfind.db"), allMigrations);
    load50k(new SkillLibrary({ db, packLimits: { maxSkills: 50_000, maxPackBytes: 128 * 1024 * 1024 } }));
    db.close();
  }
  const config = join(work, "wayfind.yaml");
  writeFileSync(config, "catalogs: []\n");
  const caller = { tenant_id: "t1", project_id: "p1" };
  const queries = searchQueries(42, 200).map((query) => ({ caller, query, limit: 8 }));
  const dataFile = join(work, "queries.json");
  writeFileSync(dataFile, JSON.stringify(queries));
  const call = { proto: "wayfind/v1/skills.proto", call: "wayfind.v1.SkillService/SearchSkills" };

  const server = await spawnServer(wayfindServeArgs(config, dataDir), {
    cpus: PIN ? "1" : undefined,
    logFile: join(work, "server.log"),
  });
  try {
    const { status, error } = await probeStatus(ghz, server.port, { ...call, data: queries[0] ?? {} });
    if (status !== "OK") throw new Error(`SearchSkills answers ${status}: ${error}`);
    const spec = (shape: (typeof SHAPES)[number], durationS: number) => ({
      ...call,
      data: queries,
      dataFile,
      connections: shape.connections,
      streams: shape.streams,
      rps: shape.rps,
      durationS,
      cpus: PIN ? "0" : undefined,
    });
    if (WARMUP_S > 0) await runGhz(ghz, server.port, spec(SHAPES[0], WARMUP_S));
    const runs = new Map(
      SHAPES.map((shape) => [shape, [] as { result: LoadResult; cpuUsPerCall: number }[]]),
    );
    for (let round = 0; round < ROUNDS; round++)
      for (const shape of SHAPES) {
        process.stderr.write(`· round ${round + 1}/${ROUNDS}: SearchSkills ${shape.name} ${DURATION_S} s\n`);
        runs.get(shape)?.push(await runWithServerCpu(ghz, server, spec(shape, DURATION_S)));
      }
    console.log(
      `\nSearchSkills at 50,000 skills, native gRPC unary over loopback (h2c), ghz closed loop, ` +
        `${queries.length} queries round-robin, limit 8; median (by req/s) of ${ROUNDS} runs of ${DURATION_S} s; ` +
        `Node ${process.version}, ${cores} cores${PIN ? ", server on CPU 1, ghz on CPU 0" : ", ghz shares the cores"}\n`,
    );
    printAligned(
      [
        "rpc",
        "conns×streams",
        "req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        "CPU µs/call",
        "p99 target",
        "",
      ],
      SHAPES.map((shape) => {
        const { result: r, cpuUsPerCall } = medianByRps(runs.get(shape) ?? []);
        const met = r.errors === 0 && r.p99Ms < TARGET_P99_MS;
        return [
          "SearchSkills",
          shape.name,
          Math.round(r.rps).toString(),
          r.p50Ms.toFixed(2),
          r.p95Ms.toFixed(2),
          r.p99Ms.toFixed(2),
          r.errors.toString(),
          Math.round(cpuUsPerCall).toString(),
          shape.targeted ? `< ${TARGET_P99_MS} ms` : "(no target)",
          shape.targeted ? (met ? "met" : "MISSED") : "",
        ];
      }),
      new Set([2, 3, 4, 5, 6, 7]),
    );
    const inFlight = SHAPES[0].connections * SHAPES[0].streams;
    const needRps = inFlight / (TARGET_P99_MS / 1000);
    console.log(
      `  with ${inFlight} callers always in flight, mean latency = ${inFlight} / req/s: p99 < ${TARGET_P99_MS} ms ` +
        `needs > ${Math.round(needRps)} req/s, i.e. < ${Math.round(1e6 / needRps)} µs of server CPU per call ` +
        "on its one event-loop thread",
    );
    console.log(`  server RSS after the runs: ${((server.rss().nowMiB * 1024 * 1024) / 1e6).toFixed(1)} MB`);
  } finally {
    await server.stop();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
