import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const TOOLS = [
  { name: "get_weather", description: "Get the weather forecast for a city." },
  { name: "send_email", description: "Send an email message." },
];
const caller = { tenantId: "acme", runId: "r-1" };
const SEARCH = "/wayfind.v1.ToolDiscoveryService/SearchTools";

let wayfind: TestServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-metrics-"));
  writeFileSync(join(dir, "tools.jsonl"), TOOLS.map((t) => JSON.stringify(t)).join("\n"));
  wayfind = await startTestServer(
    { catalogs: [{ path: "tools.jsonl", namespace: "demo" }] },
    { dataDir: dir },
  );
});
afterAll(() => wayfind.stop());

/** The scraped samples: `name{labels}` → value. */
async function scrape(server = wayfind): Promise<Map<string, number>> {
  const response = await fetch(`${server.baseUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** The sample of `name` whose labels include every one given (0 when absent). */
function sample(samples: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const [key, value] of samples)
    if ((key === name || key.startsWith(`${name}{`)) && wanted.every((w) => key.includes(w))) return value;
  return 0;
}

/** Scrapes until `ready` holds: counters from events are counted once their batch commits. */
async function scrapeUntil(ready: (samples: Map<string, number>) => boolean): Promise<Map<string, number>> {
  for (let attempt = 0; ; attempt++) {
    const samples = await scrape();
    if (ready(samples) || attempt >= 50) return samples;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A scrape once earlier tests' reports have landed: they are committed after their calls (batched;
 * on a replica, through the change log), so a count may still move for a moment.
 */
async function settled(): Promise<Map<string, number>> {
  let previous = await scrape();
  for (let attempt = 0; attempt < 50; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const samples = await scrape();
    const moved = [...samples].some(
      ([name, value]) => name.startsWith("wayfind_searches") && previous.get(name) !== value,
    );
    if (!moved) return samples;
    previous = samples;
  }
  return previous;
}

describe("GET /metrics", () => {
  it("counts calls by method, code and protocol, with their latency", async () => {
    const before = await scrape();
    const tools = wayfind.grpc(ToolDiscoveryService);
    await tools.searchTools({ caller, query: "weather" });
    await tools.searchTools({ caller, query: "weather forecast" });
    await failure(tools.searchTools({ caller, query: "weather", limit: 21 }));
    await wayfind.connect(ToolDiscoveryService).searchTools({ caller, query: "email" });
    const after = await scrape();
    const ok = { method: SEARCH, code: "ok", protocol: "grpc" };
    expect(sample(after, "wayfind_calls_total", ok) - sample(before, "wayfind_calls_total", ok)).toBe(2);
    const bad = { method: SEARCH, code: "invalid_argument", protocol: "grpc" };
    expect(sample(after, "wayfind_calls_total", bad) - sample(before, "wayfind_calls_total", bad)).toBe(1);
    const connect = { method: SEARCH, code: "ok", protocol: "connect" };
    expect(
      sample(after, "wayfind_calls_total", connect) - sample(before, "wayfind_calls_total", connect),
    ).toBe(1);
    expect(
      sample(after, "wayfind_call_duration_seconds_count", { method: SEARCH, protocol: "grpc" }),
    ).toBeGreaterThanOrEqual(3);
  });

  it("counts searches, zero-result searches and activations from the committed events", async () => {
    const before = await settled();
    const tools = wayfind.grpc(ToolDiscoveryService);
    await tools.searchTools({ caller, query: "weather" });
    await tools.searchTools({ caller, query: "zzqxv" });
    await tools.activateTools({ caller, names: ["demo.get_weather"] });
    const delta = (s: Map<string, number>, name: string, labels: Record<string, string> = {}) =>
      sample(s, name, labels) - sample(before, name, labels);
    // Reports of searches are committed after the call (batched; on a replica, through the change log).
    const after = await scrapeUntil(
      (s) =>
        delta(s, "wayfind_tool_activations_total") >= 1 &&
        delta(s, "wayfind_searches_total", { kind: "tool", requested_type: "fts" }) >= 2,
    );
    expect(delta(after, "wayfind_searches_total", { kind: "tool", requested_type: "fts" })).toBe(2);
    expect(delta(after, "wayfind_searches_zero_results_total", { kind: "tool" })).toBe(1);
    expect(delta(after, "wayfind_tool_activations_total", { scope: "run", source: "explicit" })).toBe(1);
  });

  it("counts recorded tokens and cost by provider and model", async () => {
    await wayfind.grpc(UsageService).recordUsage({
      caller,
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 1000n, outputTokens: 200n, cacheReadInputTokens: 5000n },
      idempotencyKey: "metrics-1",
    });
    const labels = { provider: "anthropic", model: "claude-sonnet-4-5" };
    const after = await scrapeUntil(
      (s) => sample(s, "wayfind_usage_tokens_total", { ...labels, kind: "input" }) > 0,
    );
    expect(sample(after, "wayfind_usage_tokens_total", { ...labels, kind: "input" })).toBe(1000);
    expect(sample(after, "wayfind_usage_tokens_total", { ...labels, kind: "cache_read" })).toBe(5000);
    expect(sample(after, "wayfind_usage_cost_usd_total", labels)).toBeGreaterThan(0);
  });

  it("reports the catalog size and the process's own metrics", async () => {
    const samples = await scrape();
    expect(sample(samples, "wayfind_tools")).toBe(TOOLS.length);
    expect(sample(samples, "wayfind_process_resident_memory_bytes")).toBeGreaterThan(0);
  });

  it("reports open watch streams and how far behind the slowest is", async () => {
    const abort = new AbortController();
    const stream = wayfind
      .grpc(ToolDiscoveryService)
      .watchToolEvents({ caller }, { signal: abort.signal })
      [Symbol.asyncIterator]();
    await stream.next(); // the stream's first message: it is subscribed
    try {
      const samples = await scrape();
      expect(sample(samples, "wayfind_event_subscribers")).toBeGreaterThanOrEqual(1);
      expect(samples.has("wayfind_event_subscriber_lag")).toBe(true);
      expect(sample(samples, "wayfind_event_subscriber_gaps")).toBe(0);
    } finally {
      abort.abort();
      await stream.return?.();
    }
  });

  it("is off with server.metrics: false", async () => {
    const quiet = await startTestServer({ server: { metrics: false } });
    try {
      expect((await fetch(`${quiet.baseUrl}/metrics`)).status).toBe(404);
    } finally {
      await quiet.stop();
    }
  });
});
