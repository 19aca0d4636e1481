/**
 * A SearchTools load of its own process (so the bench's process measures nothing of it), for the
 * meaning-under-load benches: callers back to back (closed loop) or requests at a fixed rate whatever
 * the answers (open loop), each request read from a list and used once in order, with a trivial RPC
 * (grpc.health.v1.Health/Check) at a fixed rate on a connection of its own in the same run. Every
 * answer's latency, semantic status and tier (and, when asked, its top names) is written back.
 *
 * Run by meaningLoad() below: `node --import tsx bench/lib/meaning-client.ts SPEC.json OUT.json`.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.ts";
import { SemanticStatus, SemanticTier } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { percentile } from "./stats.ts";

export interface LoadPlan {
  readonly port: number;
  readonly tenant: string;
  readonly requests: readonly string[];
  /** Closed loop: this many callers back to back; open loop: `rate` requests a second. */
  readonly callers?: number;
  readonly rate?: number;
  /** Seconds of sending; every request is sent at most once (the plan ends early when they run out). */
  readonly durationS: number;
  /** Health checks a second on a connection of their own (0: none). */
  readonly healthRate: number;
  /** Names of the top hits kept per answer (0: none). */
  readonly keepTop: number;
  /** Connections the callers share (HTTP/2, several streams each). */
  readonly connections?: number;
}

export interface Answer {
  readonly request: string;
  /** When it was answered, in ms from the start of the plan. */
  readonly at: number;
  readonly ms: number;
  readonly tier: "model" | "static" | "none";
  readonly status: "ready" | "partial" | "other";
  readonly top: readonly string[];
  readonly error?: string;
}

export interface LoadOutcome {
  readonly answers: readonly Answer[];
  readonly seconds: number;
  readonly healthMs: readonly number[];
}

const TIERS = { [SemanticTier.MODEL]: "model", [SemanticTier.STATIC]: "static" } as const;

/** Runs `plan` from a process of its own; resolves with its outcome. */
export async function meaningLoad(plan: LoadPlan, workDir: string): Promise<LoadOutcome> {
  const spec = join(workDir, `plan-${process.hrtime.bigint()}.json`);
  const out = `${spec}.out`;
  writeFileSync(spec, JSON.stringify(plan));
  await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", new URL(import.meta.url).pathname, spec, out],
    { maxBuffer: 1 << 20 },
  );
  return JSON.parse(readFileSync(out, "utf8")) as LoadOutcome;
}

/** Share of answers of a tier, throughput, latencies: the figures every meaning bench prints. */
export function summary(outcome: LoadOutcome) {
  const ok = outcome.answers.filter((a) => a.error === undefined);
  const ms = ok.map((a) => a.ms).sort((a, b) => a - b);
  const health = [...outcome.healthMs].sort((a, b) => a - b);
  const share = (tier: Answer["tier"]) => ok.filter((a) => a.tier === tier).length / Math.max(1, ok.length);
  return {
    answers: ok.length,
    errors: outcome.answers.length - ok.length,
    perSecond: ok.length / outcome.seconds,
    model: share("model"),
    static: share("static"),
    none: share("none"),
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    healthP99: percentile(health, 99),
  };
}

async function run(plan: LoadPlan): Promise<LoadOutcome> {
  const clients: Client<typeof ToolDiscoveryService>[] = Array.from({ length: plan.connections ?? 4 }, () =>
    createClient(ToolDiscoveryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${plan.port}` })),
  );
  const health = createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${plan.port}` }));
  const answers: Answer[] = [];
  const healthMs: number[] = [];
  const started = performance.now();
  const until = started + plan.durationS * 1_000;
  let next = 0;
  let sent = 0;

  const ask = async (request: string, client: Client<typeof ToolDiscoveryService>): Promise<void> => {
    const t0 = performance.now();
    try {
      const response = await client.searchTools({
        caller: { tenantId: plan.tenant },
        query: request,
        limit: 10,
      });
      answers.push({
        request,
        at: performance.now() - started,
        ms: performance.now() - t0,
        tier: TIERS[response.semanticTier as keyof typeof TIERS] ?? "none",
        status:
          response.semanticStatus === SemanticStatus.READY
            ? "ready"
            : response.semanticStatus === SemanticStatus.PARTIAL
              ? "partial"
              : "other",
        top: response.tools.slice(0, plan.keepTop).map((t) => t.name),
      });
    } catch (error) {
      answers.push({
        request,
        at: performance.now() - started,
        ms: performance.now() - t0,
        tier: "none",
        status: "other",
        top: [],
        error: String(error),
      });
    }
  };

  const checks = (async () => {
    if (plan.healthRate <= 0) return;
    const pending: Promise<void>[] = [];
    for (let i = 0; ; i++) {
      const at = started + (i * 1_000) / plan.healthRate;
      if (at >= until) break;
      await sleepUntil(at);
      const t0 = performance.now();
      pending.push(health.check({}).then(() => void healthMs.push(performance.now() - t0)));
    }
    await Promise.all(pending);
  })();

  if (plan.rate !== undefined) {
    const pending: Promise<void>[] = [];
    for (let i = 0; i < plan.requests.length; i++) {
      const at = started + (i * 1_000) / plan.rate;
      if (at >= until) break;
      await sleepUntil(at);
      pending.push(
        ask(plan.requests[i] as string, clients[i % clients.length] as Client<typeof ToolDiscoveryService>),
      );
      sent++;
    }
    await Promise.all(pending);
  } else {
    await Promise.all(
      Array.from({ length: plan.callers ?? 1 }, async (_, caller) => {
        const client = clients[caller % clients.length] as Client<typeof ToolDiscoveryService>;
        while (performance.now() < until && next < plan.requests.length) {
          const request = plan.requests[next++] as string;
          sent++;
          await ask(request, client);
        }
      }),
    );
  }
  const seconds = (performance.now() - started) / 1_000;
  await checks;
  return {
    answers,
    seconds: plan.rate !== undefined ? Math.min(seconds, sent / plan.rate) : seconds,
    healthMs,
  };
}

function sleepUntil(at: number): Promise<void> {
  const wait = at - performance.now();
  return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : Promise.resolve();
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [specPath, outPath] = process.argv.slice(2);
  if (specPath === undefined || outPath === undefined) throw new Error("usage: meaning-client.ts SPEC OUT");
  const outcome = await run(JSON.parse(readFileSync(specPath, "utf8")) as LoadPlan);
  writeFileSync(outPath, JSON.stringify(outcome));
  process.exit(0);
}
