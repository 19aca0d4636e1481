import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { type HttpMcpServer, startHttpMcpServer } from "../sources/mcp-servers.ts";
import { fleetForFile, type TestReplica } from "../support/replicas.ts";

// One MCP server shared by three replicas (issue 17 item 6): one replica at a time syncs it, under a
// lease that passes on when its holder dies; every replica serves what the holder registered.
let mcp: HttpMcpServer;
let configDir: string;
beforeAll(async () => {
  mcp = await startHttpMcpServer([{ name: "lookup_order", description: "Look up a shop order by id." }]);
  configDir = mkdtempSync(join(tmpdir(), "wayfind-replica-mcp-"));
  writeFileSync(
    join(configDir, "wayfind.yaml"),
    stringify({ mcp_servers: [{ name: "shop", transport: "http", url: mcp.url }] }),
  );
});
afterAll(async () => {
  await mcp?.close();
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});
// Registered after the hooks above: the replicas start once the MCP server and config exist.
const { fleet, unavailable } = fleetForFile(3, { config: () => join(configDir, "wayfind.yaml") });
const { replicas } = fleet;

const operator = { headers: { "wayfind-role": "admin" } };

/** Which replicas report having synced `mcp:shop` themselves (the lease holder does). */
async function syncers(): Promise<TestReplica[]> {
  const synced = await Promise.all(
    replicas.map(async (replica) => {
      if (replica.run.child.exitCode !== null || replica.run.child.signalCode !== null) return false;
      const { sources } = await replica.grpc(ToolDiscoveryService).listToolSources({}, operator);
      return sources.find((source) => source.name === "mcp:shop")?.lastSyncTime !== undefined;
    }),
  );
  return replicas.filter((_, i) => synced[i]);
}

async function searchable(replica: TestReplica, name: string): Promise<boolean> {
  const found = await replica
    .grpc(ToolDiscoveryService)
    .searchTools({ caller: { tenantId: "acme" }, query: name, includeAlwaysLoaded: true });
  return found.tools.some((tool) => tool.name === name);
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  for (const deadline = Date.now() + ms; ; ) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

describe.skipIf(unavailable)(
  `an MCP server shared by three replicas${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("is synced by exactly one replica, served by all, and taken over when that replica dies", async () => {
      const holder = await eventually("one replica syncs", async () => {
        const now = await syncers();
        return now.length === 1 ? now[0] : undefined;
      });
      for (const replica of replicas) expect(await searchable(replica, "shop.lookup_order")).toBe(true);

      holder.run.child.kill("SIGKILL");
      await holder.run.exited;
      mcp.addTool({ name: "refund_order", description: "Refund a shop order to the customer." });
      const next = await eventually("another replica takes the lease and syncs", async () => {
        const now = await syncers();
        return now.length === 1 ? now[0] : undefined;
      });
      expect(next).not.toBe(holder);
      // The new holder's sync registered the tool added meanwhile; every live replica serves it.
      for (const replica of replicas.filter((r) => r !== holder))
        await eventually(`refund_order searchable on :${replica.port}`, async () =>
          (await searchable(replica, "shop.refund_order")) ? true : undefined,
        );
    }, 60_000);
  },
);
