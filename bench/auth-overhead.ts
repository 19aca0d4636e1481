/**
 * What authentication and TLS cost: SearchTools throughput and latency over native gRPC (16 calls in
 * flight from one client, the demo's GitHub catalog) against `wayfind serve` with no credentials, an
 * API key, and a JWT (one token, verified once and then cached until it expires), each over h2c and
 * over TLS; each setting in its own child process, runs interleaved, the median run per setting.
 * Issue 15's targets: API key ≥ 95 % and JWT ≥ 90 % of the unauthenticated throughput (h2c); TLS
 * reported beside h2c. Also: one uncached JWT verification (a token the server has not seen).
 * Usage: node --import tsx bench/auth-overhead.ts [--seconds S] [--rounds N]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKeySha256 } from "../src/auth/index.ts";
import { JwtVerifier } from "../src/auth/jwt.ts";
import { authConfig } from "../src/config/auth.ts";
import {
  prepareWayfind,
  ROOT,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { IN_FLIGHT, searchToolsLoad } from "./lib/search-load.ts";
import { percentile } from "./lib/stats.ts";

const TLS = join(ROOT, "test/fixtures/tls");
const API_KEY = `wf_bench-${"k".repeat(40)}`;
const ISSUER = "https://issuer.bench";

interface Run {
  readonly callsPerSecond: number;
  readonly latenciesMs: number[];
  /** Server CPU per call (user + system), µs: the steadiest figure on a shared machine. */
  readonly cpuUsPerCall: number;
}

async function measure(
  server: ServerProcess,
  secure: boolean,
  token: string | undefined,
  seconds: number,
): Promise<Run> {
  const { port } = server;
  const client = createClient(
    ToolDiscoveryService,
    createGrpcTransport({
      baseUrl: secure ? `https://localhost:${port}` : `http://127.0.0.1:${port}`,
      ...(secure ? { nodeOptions: { ca: readFileSync(join(TLS, "ca.pem")) } } : {}),
      interceptors:
        token === undefined
          ? []
          : [
              (next) => (request) => {
                request.header.set("authorization", `Bearer ${token}`);
                return next(request);
              },
            ],
    }),
  );
  const cpuBefore = server.cpuMs();
  const latenciesMs = await searchToolsLoad(client, seconds);
  const cpuUsPerCall = ((server.cpuMs() - cpuBefore) * 1000) / latenciesMs.length;
  return { callsPerSecond: latenciesMs.length / seconds, latenciesMs, cpuUsPerCall };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: "string", default: "4" }, rounds: { type: "string", default: "3" } },
  });
  const runtime = await prepareWayfind(ROOT);
  const work = mkdtempSync(join(tmpdir(), "wayfind-auth-bench-"));
  const keys = await generateKeyPair("ES256", { extractable: true });
  writeFileSync(join(work, "jwt.pem"), await exportSPKI(keys.publicKey));
  const sign = () =>
    new SignJWT({ tenant: "bench", roles: ["agent"] })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer(ISSUER)
      .setAudience("wayfind")
      .setSubject("bench")
      .setExpirationTime("1h")
      .sign(keys.privateKey);
  const jwt = await sign();

  const catalog = `catalogs: [{path: ${join(ROOT, "demo/catalogs/github.jsonl")}, namespace: github}]`;
  const tls = `server: {tls: {cert_file: ${join(TLS, "server.pem")}, key_file: ${join(TLS, "server-key.pem")}}}`;
  const auth = `auth: {allow_unauthenticated: false, api_keys: [{id: bench, tenant: bench, roles: [agent], key_sha256: ${apiKeySha256(API_KEY)}}], jwt: {public_keys: [${join(work, "jwt.pem")}], issuer: "${ISSUER}", audience: wayfind}}`;
  const settings = [
    { name: "none, h2c", yaml: [catalog], secure: false, token: undefined },
    { name: "API key, h2c", yaml: [catalog, auth], secure: false, token: API_KEY },
    { name: "JWT, h2c", yaml: [catalog, auth], secure: false, token: jwt },
    { name: "none, TLS", yaml: [catalog, tls], secure: true, token: undefined },
    { name: "API key, TLS", yaml: [catalog, tls, auth], secure: true, token: API_KEY },
    { name: "JWT, TLS", yaml: [catalog, tls, auth], secure: true, token: jwt },
  ] as const;
  const servers: { setting: (typeof settings)[number]; server: ServerProcess; runs: Run[] }[] = [];
  try {
    for (const setting of settings) {
      const slug = setting.name.replace(/\W+/g, "-");
      const config = join(work, `${slug}.yaml`);
      writeFileSync(config, `${setting.yaml.join("\n")}\n`);
      const server = await spawnServer(wayfindServeArgs(config, join(work, slug)), {
        logFile: join(work, `${slug}.log`),
      });
      servers.push({ setting, server, runs: [] });
    }
    // Warm-up: the JIT settles over the first few thousand calls (a 1 s warm-up left 2x CPU per call).
    for (const s of servers) await measure(s.server, s.setting.secure, s.setting.token, 4);
    for (let round = 0; round < Number(values.rounds); round++)
      for (const s of servers)
        s.runs.push(await measure(s.server, s.setting.secure, s.setting.token, Number(values.seconds)));
  } finally {
    for (const s of servers) await s.server.stop();
  }

  // A token the server has not seen: the signature check and claim mapping, once per token.
  const { jwt: jwtConfig } = authConfig(
    { jwt: { public_keys: [join(work, "jwt.pem")], issuer: ISSUER, audience: "wayfind" } },
    (path) => path,
  );
  if (!jwtConfig) throw new Error("jwt config did not load");
  const verifier = new JwtVerifier(jwtConfig);
  const fresh = await Promise.all(Array.from({ length: 200 }, sign));
  const started = performance.now();
  for (const token of fresh) await verifier.verify(token);
  const uncachedUs = ((performance.now() - started) * 1000) / fresh.length;
  rmSync(work, { recursive: true, force: true });

  const median = (runs: readonly Run[]) =>
    [...runs].sort((a, b) => a.callsPerSecond - b.callsPerSecond)[Math.floor(runs.length / 2)];
  const baseline = (secure: boolean) =>
    median(servers.find((s) => s.setting.token === undefined && s.setting.secure === secure)?.runs ?? [])
      ?.callsPerSecond ?? 1;
  console.log(
    `wayfind serve (${runtime}), SearchTools over gRPC, ${IN_FLIGHT} in flight; load ${loadavg()[0]?.toFixed(1)}`,
  );
  const cpuOf = (secure: boolean) => {
    const runs =
      servers.find((s) => s.setting.token === undefined && s.setting.secure === secure)?.runs ?? [];
    return [...runs.map((r) => r.cpuUsPerCall)].sort((a, b) => a - b)[Math.floor(runs.length / 2)] ?? 1;
  };
  console.log(
    "setting         calls/s  vs none  server CPU/call  vs none  p50 ms  p95 ms  p99 ms   runs (calls/s)",
  );
  for (const s of servers) {
    const run = median(s.runs);
    if (!run) continue;
    const sorted = [...run.latenciesMs].sort((a, b) => a - b);
    const cpu =
      [...s.runs.map((r) => r.cpuUsPerCall)].sort((a, b) => a - b)[Math.floor(s.runs.length / 2)] ?? 0;
    console.log(
      [
        s.setting.name.padEnd(14),
        run.callsPerSecond.toFixed(0).padStart(7),
        `${((100 * run.callsPerSecond) / baseline(s.setting.secure)).toFixed(1).padStart(6)} %`,
        `${cpu.toFixed(0).padStart(9)} µs    `,
        `${((100 * cpu) / cpuOf(s.setting.secure)).toFixed(1).padStart(6)} %`,
        percentile(sorted, 50).toFixed(2).padStart(6),
        percentile(sorted, 95).toFixed(2).padStart(6),
        percentile(sorted, 99).toFixed(2).padStart(6),
        `  ${s.runs.map((r) => r.callsPerSecond.toFixed(0)).join(", ")}`,
      ].join("  "),
    );
  }
  console.log(
    `TLS vs h2c (none): ${((100 * baseline(true)) / baseline(false)).toFixed(1)} % of the throughput, ${((100 * cpuOf(true)) / cpuOf(false)).toFixed(1)} % of the server CPU per call`,
  );
  console.log(`one uncached JWT verification (ES256, static key): ${uncachedUs.toFixed(0)} µs`);
  console.log("targets: API key ≥ 95 %, JWT ≥ 90 % of none (h2c); TLS reported");
}

await main();
