import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { startTracing, type Tracing } from "../../src/server/tracing.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let wayfind: TestServer;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN = "00f067aa0ba902b7";

beforeAll(async () => {
  tracing = startTracing(new SimpleSpanProcessor({ exporter }));
  const dir = mkdtempSync(join(tmpdir(), "wayfind-tracing-"));
  writeFileSync(
    join(dir, "tools.jsonl"),
    JSON.stringify({ name: "get_weather", description: "Weather forecast." }),
  );
  wayfind = await startTestServer(
    { catalogs: [{ path: "tools.jsonl" }] },
    { dataDir: dir, traceCalls: true },
  );
});
afterAll(async () => {
  await wayfind.stop();
  await tracing.shutdown();
});

/** The spans of one trace, by name. */
function spansOf(traceId: string) {
  return new Map(
    exporter
      .getFinishedSpans()
      .filter((span) => span.spanContext().traceId === traceId)
      .map((span) => [span.name, span]),
  );
}

describe("tracing", () => {
  it("continues the caller's trace (W3C traceparent) with a span per call and its work inside", async () => {
    const traceparent = `00-${TRACE_ID}-${PARENT_SPAN}-01`;
    await wayfind
      .grpc(ToolDiscoveryService)
      .searchTools({ caller: { tenantId: "acme" }, query: "weather" }, { headers: { traceparent } });
    const spans = spansOf(TRACE_ID);
    const call = spans.get("wayfind.v1.ToolDiscoveryService/SearchTools");
    expect(call?.parentSpanContext?.spanId).toBe(PARENT_SPAN);
    expect(call?.attributes["rpc.system"]).toBe("grpc");
    const search = spans.get("wayfind.tool_search");
    expect(search?.parentSpanContext?.spanId).toBe(call?.spanContext().spanId);
    expect(search?.attributes["wayfind.search.result_count"]).toBe(1);
  });

  it("marks a failed call with its gRPC code", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const traceparent = `00-${traceId}-b7ad6b7169203331-01`;
    await failure(
      wayfind
        .connect(ToolDiscoveryService)
        .searchTools(
          { caller: { tenantId: "acme" }, query: "weather", limit: 99 },
          { headers: { traceparent } },
        ),
    );
    const call = spansOf(traceId).get("wayfind.v1.ToolDiscoveryService/SearchTools");
    expect(call?.attributes["rpc.system"]).toBe("connect_rpc");
    expect(call?.attributes["rpc.grpc.status_code"]).toBe("invalid_argument");
    expect(call?.status.code).toBe(2);
  });
});
