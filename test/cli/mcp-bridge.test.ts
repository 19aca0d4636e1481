import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { EVERYTHING } from "../sources/mcp-servers.ts";
import { CLI } from "../support/cli.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * `wayfind mcp`, the stdio bridge a client launches: the official SDK client over stdio reaches the
 * tools of the MCP servers behind a running wayfind, and keeps reaching them across a restart.
 */

const CONFIG = { mcp_servers: [{ name: "everything", transport: "stdio", ...EVERYTHING() }] };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(dataDir: string, port = 0): Promise<TestServer> {
  const server = await startTestServer({ ...CONFIG, server: { port } }, { dataDir });
  cleanups.push(() => server.stop());
  return server;
}

/** The SDK client, launching `wayfind mcp` as Claude Desktop or Cursor would. */
async function bridgeTo(url: string, ...flags: string[]): Promise<Client> {
  const client = new Client({ name: "bridge-test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "mcp", "--url", url, "--tenant", "acme", ...flags],
      stderr: "pipe",
    }),
  );
  cleanups.push(() => client.close());
  return client;
}

const echo = {
  name: "tool_call",
  arguments: { name: "everything.echo", arguments: { message: "over stdio" } },
};

describe("wayfind mcp", () => {
  it("lists wayfind's tools and calls an upstream tool through it", async () => {
    const wayfind = await serve(mkdtempSync(join(tmpdir(), "wayfind-bridge-")));
    const client = await bridgeTo(wayfind.baseUrl);
    expect(client.getServerVersion()?.name).toBe("wayfind");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("tool_search");
    expect(await client.callTool(echo)).toEqual({ content: [{ type: "text", text: "Echo: over stdio" }] });
  }, 60_000);

  it("asks for the activated tool list with --tool-list activated, and passes its changes on", async () => {
    const wayfind = await serve(mkdtempSync(join(tmpdir(), "wayfind-bridge-")));
    const client = await bridgeTo(wayfind.baseUrl, "--tool-list", "activated");
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    await client.listTools();
    let announced = false;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      announced = true;
    });
    await client.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } });
    await expect.poll(() => announced).toBe(true);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("everything.echo");
  }, 60_000);

  it("opens a new session when the server restarted, without the client noticing", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-bridge-"));
    const first = await serve(dataDir);
    const client = await bridgeTo(first.baseUrl);
    await client.callTool(echo);
    await first.stop({ keepData: true });
    await serve(dataDir, first.port);
    expect(await client.callTool(echo)).toEqual({ content: [{ type: "text", text: "Echo: over stdio" }] });
  }, 60_000);

  it("answers each request with a JSON-RPC error while no wayfind answers", async () => {
    const client = new Client({ name: "bridge-test", version: "1.0.0" });
    const connecting = client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp", "--url", "http://127.0.0.1:9"],
      }),
    );
    cleanups.push(() => client.close());
    await expect(connecting).rejects.toThrow(/cannot be reached/);
  }, 30_000);

  it("answers with what is wrong with the key when the README's placeholder was pasted, calling nothing", async () => {
    const server = await serve(mkdtempSync(join(tmpdir(), "wayfind-bridge-")));
    const client = new Client({ name: "bridge-test", version: "1.0.0" });
    const connecting = client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp", "--url", server.baseUrl],
        env: { ...process.env, WAYFIND_API_KEY: "wf_…" } as Record<string, string>,
        stderr: "pipe",
      }),
    );
    cleanups.push(() => client.close());
    await expect(connecting).rejects.toThrow(
      /the API key in WAYFIND_API_KEY cannot be a key: character 4 of 4 is "…" \(the placeholder/,
    );
  }, 30_000);

  it("says the server refused a key it does not know, not that it cannot be reached", async () => {
    const secured = await startTestServer({ auth: { allow_unauthenticated: false } });
    cleanups.push(() => secured.stop());
    const client = new Client({ name: "bridge-test", version: "1.0.0" });
    const connecting = client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp", "--url", secured.baseUrl, "--api-key", "wf_not-a-key-it-knows"],
        stderr: "pipe",
      }),
    );
    cleanups.push(() => client.close());
    await expect(connecting).rejects.toThrow(/refused the message \(HTTP 401\).*check the API key/);
  }, 30_000);
});
