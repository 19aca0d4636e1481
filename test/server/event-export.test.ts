import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryLogRecordExporter, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { eventExportFromEnv, startEventExport } from "../../src/server/event-export.ts";
import { listeningPort, runCli } from "../support/cli.ts";
import { startTestServer } from "../support/server.ts";

// Issue 19 "Events out to the tools operators already run": OpenTelemetry log records.
describe("events as OpenTelemetry log records", () => {
  it("exports each committed event with its type, scope and payload fields", async () => {
    const exporter = new InMemoryLogRecordExporter();
    const eventExport = startEventExport(new SimpleLogRecordProcessor({ exporter }));
    const wayfind = await startTestServer({}, { eventExport });
    try {
      await wayfind.grpc(UsageService).recordUsage({
        caller: { tenantId: "acme", sessionId: "s1", runId: "r1" },
        provider: Provider.ANTHROPIC,
        model: "claude-sonnet-4-5",
        usage: { inputTokens: 1200n, outputTokens: 350n },
        idempotencyKey: "otel-1",
      });
      // Exported once committed: on a PostgreSQL replica that is when the change log comes back.
      const exported = () =>
        exporter.getFinishedLogRecords().find((r) => r.eventName === "wayfind.usage_recorded");
      await expect.poll(exported).toBeDefined();
      const record = exported();
      expect(record?.attributes).toMatchObject({
        "wayfind.event.type": "usage_recorded",
        "wayfind.tenant_id": "acme",
        "wayfind.session_id": "s1",
        "wayfind.run_id": "r1",
        "wayfind.model": "claude-sonnet-4-5",
        "wayfind.input_tokens": 1200,
        "wayfind.output_tokens": 350,
      });
      expect(record?.body).toBe("usage_recorded");
    } finally {
      await wayfind.stop();
      await eventExport.shutdown();
    }
  });

  it("is on only when the OTEL_* variables ask for logs", () => {
    expect(eventExportFromEnv({})).toBeUndefined();
    expect(
      eventExportFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_LOGS_EXPORTER: "none" }),
    ).toBeUndefined();
    expect(eventExportFromEnv({ OTEL_LOGS_EXPORTER: "otlp", OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    const on = eventExportFromEnv({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: "http://127.0.0.1:9/v1/logs" });
    expect(on).toBeDefined();
    void on?.shutdown();
  });

  it("reaches an OTLP/HTTP collector from `wayfind serve` configured by the usual variables", async () => {
    const bodies: Buffer[] = [];
    const collector = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        if (request.url === "/v1/logs") bodies.push(Buffer.concat(chunks));
        response.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/logs`;
    const serve = runCli(
      ["serve", "--port", "0", "--data-dir", mkdtempSync(join(tmpdir(), "wayfind-otel-"))],
      {
        OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: endpoint,
        OTEL_BLRP_SCHEDULE_DELAY: "50",
      },
    );
    try {
      expect(await listeningPort(serve)).toBeGreaterThan(0);
      // Every start records what the policy filtered: that event arrives as a log record.
      await expect
        .poll(() => Buffer.concat(bodies).includes("wayfind.tool_policy_filtered"), { timeout: 10_000 })
        .toBe(true);
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
      collector.close();
    }
  }, 30_000);
});
