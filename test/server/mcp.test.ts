import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.ts";
import {
  LoadingMode,
  SideEffect,
  ToolDiscoveryService,
  ToolSourceKind,
} from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { type HttpMcpServer, MEMORY, startHttpMcpServer } from "../sources/mcp-servers.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

let wayfind: TestServer;
let http: HttpMcpServer;
const caller = { tenantId: "acme", sessionId: "s-mcp", runId: "r-mcp" };

beforeAll(async () => {
  http = await startHttpMcpServer([
    { name: "lookup_order", description: "Look up a shop order by id.", readOnly: true },
  ]);
  const dir = mkdtempSync(join(tmpdir(), "wayfind-mcp-server-"));
  writeFileSync(
    join(dir, "github.jsonl"),
    `${JSON.stringify({ name: "create_issue", description: "Open an issue." })}\n`,
  );
  wayfind = await startTestServer(
    {
      catalogs: [{ path: "github.jsonl", namespace: "github" }],
      mcp_servers: [
        {
          name: "memory",
          transport: "stdio",
          ...MEMORY(),
          env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") },
        },
        { name: "shop", transport: "http", url: http.url },
        { name: "ghost", transport: "stdio", command: "wayfind-no-such-command-xyz" },
      ],
    },
    { dataDir: dir },
  );
}, 30_000);
afterAll(async () => {
  await wayfind?.stop();
  await http?.close();
});

const client = () => wayfind.grpc(ToolDiscoveryService);

describe("MCP servers through the real server", () => {
  it("reports each MCP server's health and last sync duration in GET /metrics", async () => {
    const metrics = await (await fetch(`${wayfind.baseUrl}/metrics`)).text();
    expect(metrics).toContain('wayfind_mcp_source_up{source="mcp:shop"} 1');
    expect(metrics).toContain('wayfind_mcp_source_up{source="mcp:ghost"} 0');
    expect(metrics).toMatch(/wayfind_mcp_last_sync_duration_seconds\{source="mcp:shop"\} \d/);
  });

  it("serves MCP tools to SearchTools, GetTools and ResolveTool", async () => {
    const search = await client().searchTools({ caller, query: "create entities in the knowledge graph" });
    expect(search.tools[0]?.name).toBe("memory.create_entities");

    const got = await client().getTools({ caller, names: ["shop.lookup_order"], includeSchemas: true });
    expect(got.tools[0]).toMatchObject({
      name: "shop.lookup_order",
      namespace: "shop",
      source: "mcp:shop",
      sideEffect: SideEffect.READ,
      loadingMode: LoadingMode.DEFERRED,
    });
    expect(got.tools[0]?.argsSchema).toMatchObject({
      type: "object",
      properties: { text: { type: "string" } },
    });

    const resolved = await client().resolveTool({ caller, name: "memory.read_graph" });
    expect(resolved.tool?.source).toBe("mcp:memory");
    expect(resolved.activated).toBe(true);
  });

  it("lists the operator every source with kind, tool count, health and the error of a broken one", async () => {
    await client().registerTools(
      { source: "team-api", namespace: "team", tools: [{ name: "ping", description: "Ping." }] },
      { headers: { "wayfind-role": "admin" } },
    );
    const { sources } = await client().listToolSources({}, { headers: { "wayfind-role": "admin" } });
    const byName = Object.fromEntries(sources.map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual([
      "catalog:github",
      "mcp:ghost",
      "mcp:memory",
      "mcp:shop",
      "team-api",
    ]);
    expect(byName["catalog:github"]).toMatchObject({
      kind: ToolSourceKind.CATALOG_FILE,
      toolCount: 1,
      healthy: true,
    });
    expect(byName["mcp:memory"]).toMatchObject({
      kind: ToolSourceKind.MCP_STDIO,
      healthy: true,
      lastError: "",
    });
    expect(byName["mcp:memory"]?.toolCount).toBeGreaterThanOrEqual(9);
    expect(byName["mcp:shop"]).toMatchObject({ kind: ToolSourceKind.MCP_HTTP, toolCount: 1, healthy: true });
    expect(byName["mcp:ghost"]).toMatchObject({
      kind: ToolSourceKind.MCP_STDIO,
      toolCount: 0,
      healthy: false,
    });
    expect(byName["mcp:ghost"]?.lastError).toContain("command not found: wayfind-no-such-command-xyz");
    expect(byName["mcp:ghost"]?.lastSyncTime).toBeUndefined();
    expect(byName["team-api"]).toMatchObject({ kind: ToolSourceKind.API, toolCount: 1, healthy: true });
    const synced = byName["mcp:memory"]?.lastSyncTime;
    expect(synced && Date.now() - timestampDate(synced).getTime()).toBeLessThan(60_000);
  });

  it("reports each MCP server in grpc.health.v1 as its own service", async () => {
    const health = wayfind.grpc(Health);
    expect((await health.check({ service: "wayfind.source.mcp:memory" })).status).toBe(ServingStatus.SERVING);
    expect((await health.check({ service: "wayfind.source.mcp:ghost" })).status).toBe(
      ServingStatus.NOT_SERVING,
    );
  });

  it("stop() ends the stdio MCP server processes", async () => {
    const memory = wayfind.server.mcp.sources.find((s) => s.id === "mcp:memory");
    const pid = memory?.pid as number;
    expect(pid).toBeGreaterThan(0);
    await wayfind.stop({ keepData: true });
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  });
});
