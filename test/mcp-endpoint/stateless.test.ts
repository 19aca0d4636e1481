import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { apiKey } from "../support/auth.ts";
import { endpointFixtureDir, modernRequest } from "../support/mcp-session.ts";
import { startReferenceMcpServer } from "../support/reference-mcp.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * wayfind's /mcp for clients of the 2026-07-28 revision (docs/mcp.md "Two eras"): the official 2.x
 * SDK client, pinned to that revision, is answered request by request with no session — the same
 * tools, skills and servers, the same credentials and visibility as a 2025-11-25 session, which the
 * same endpoint keeps serving beside it.
 */

const acme = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const bravo = apiKey("bravo-agent", { tenant: "bravo", roles: ["agent"] });
const acmeWatcher = apiKey("acme-observer", { tenant: "acme", roles: ["observer"] });

let reference: Awaited<ReturnType<typeof startReferenceMcpServer>>;
let wayfind: TestServer;
beforeAll(async () => {
  reference = await startReferenceMcpServer();
  const dir = endpointFixtureDir();
  wayfind = await startTestServer(
    {
      skill_packs: [{ name: "core", path: "skills" }],
      auth: { allow_unauthenticated: false, api_keys: [acme.entry, bravo.entry, acmeWatcher.entry] },
      catalogs: [{ path: "ops.jsonl", namespace: "ops", loading_mode: "always" }],
      mcp_servers: [{ name: "ref", transport: "http", url: reference.url }],
      // bravo may not use the reference server: its tools must look missing to bravo.
      visibility: [
        { match: { tenant: "acme" }, allow: ["*"] },
        { match: { tenant: "bravo" }, allow: ["*"], deny: ["ref.*"] },
      ],
    },
    { dataDir: dir },
  );
}, 60_000);
afterAll(async () => {
  await wayfind.stop();
  await reference.close();
});

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const client of opened.splice(0)) await client.close();
});

/**
 * The 2.x SDK client with `secret`: pinned to 2026-07-28 (no fallback to a session), unless it
 * negotiates (`auto`: a probe, and a session if the server has only 2025-11-25).
 */
async function modernClient(secret: string, mode: "auto" | "pinned" = "pinned"): Promise<ModernClient> {
  const client = new ModernClient(
    { name: "stateless-test", version: "1.0.0" },
    { versionNegotiation: { mode: mode === "auto" ? "auto" : { pin: "2026-07-28" } } },
  );
  await client.connect(
    new ModernTransport(new URL(`${wayfind.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${secret}` } },
    }),
  );
  opened.push(client);
  return client;
}

/** POSTs one 2026-07-28 request as `secret`; `headers` added or replaced (null: left out). */
function modernPost(
  secret: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string | null> = {},
) {
  const request = modernRequest(secret, 7, method, params);
  const sent = { ...request.headers, ...headers };
  return fetch(`${wayfind.baseUrl}/mcp`, {
    method: "POST",
    headers: Object.fromEntries(
      Object.entries(sent).filter((entry): entry is [string, string] => entry[1] !== null),
    ),
    body: request.body,
  });
}

const textOf = (result: unknown) =>
  ((result as { content: { text?: string }[] }).content ?? []).map((block) => block.text ?? "").join("");

describe("a 2026-07-28 client", () => {
  it("discovers the server without a handshake and is answered with no session", async () => {
    const client = await modernClient(acme.secret);
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(client.getServerVersion()?.name).toBe("wayfind");
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, prompts: {}, resources: {} });
    const answer = await modernPost(acme.secret, "tools/list");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("mcp-session-id")).toBeNull();
    // What it discovers is the same for every caller: cacheable by anyone, for a minute.
    const discovered = (await (await modernPost(acme.secret, "server/discover")).json()) as {
      result: { supportedVersions: string[]; ttlMs: number; cacheScope: string };
    };
    expect(discovered.result).toMatchObject({
      supportedVersions: ["2026-07-28"],
      ttlMs: 60_000,
      cacheScope: "public",
    });
  });

  it("lists the meta tools and the caller's always-visible tools, in the same order each time, cacheable privately", async () => {
    const client = await modernClient(acme.secret);
    const first = await client.listTools();
    const names = first.tools.map((tool) => tool.name);
    expect(names.slice(0, 3)).toEqual(["tool_search", "tool_get", "tool_call"]);
    expect(names).toContain("ops.restart");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(names);
    const raw = (await (await modernPost(acme.secret, "tools/list")).json()) as {
      result: { ttlMs: number; cacheScope: string };
    };
    expect(raw.result.cacheScope).toBe("private");
    expect(raw.result.ttlMs).toBeGreaterThan(0);
  });

  it("finds a tool with tool_search and calls a server's tool through wayfind", async () => {
    const client = await modernClient(acme.secret);
    const found = JSON.parse(
      textOf(await client.callTool({ name: "tool_search", arguments: { query: "simple text response" } })),
    );
    expect(found.tools.map((tool: { name: string }) => tool.name)).toContain("ref.test_simple_text");
    const called = await client.callTool({
      name: "tool_call",
      arguments: { name: "ref.test_simple_text", arguments: {} },
    });
    expect(textOf(called)).toBe("This is a simple text response for testing.");
  });

  it("reads the caller's skills as prompts and skill:// resources", async () => {
    const client = await modernClient(acme.secret);
    const paginate = (await client.listPrompts()).prompts.find((prompt) => prompt.name.includes("paginate"));
    expect(paginate?.description).toBeTruthy();
    const uri = "skill://pack/core/paginate-cursor-api/SKILL.md";
    expect((await client.listResources()).resources.map((resource) => resource.uri)).toContain(uri);
    const read = await client.readResource({ uri });
    expect(read.contents[0]).toMatchObject({ uri, text: expect.stringContaining("cursor") });
  });

  it("keeps another tenant's server out of its list and its calls, exactly as a missing one", async () => {
    const client = await modernClient(bravo.secret);
    const found = JSON.parse(
      textOf(await client.callTool({ name: "tool_search", arguments: { query: "simple text response" } })),
    );
    expect(found.tools.filter((tool: { name: string }) => tool.name.startsWith("ref."))).toEqual([]);
    const hidden = await client.callTool({
      name: "tool_call",
      arguments: { name: "ref.test_simple_text", arguments: {} },
    });
    const missing = await client.callTool({
      name: "tool_call",
      arguments: { name: "ref.no_such_tool", arguments: {} },
    });
    expect(hidden.isError).toBe(true);
    expect(textOf(hidden).replace("test_simple_text", "X")).toBe(
      textOf(missing).replace("no_such_tool", "X"),
    );
  });

  it("is served beside a 2025-11-25 session on the same endpoint", async () => {
    const legacy = new Client({ name: "legacy", version: "1.0.0" });
    await legacy.connect(
      new StreamableHTTPClientTransport(new URL(`${wayfind.baseUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${acme.secret}` } },
      }),
    );
    opened.push(legacy);
    // A client that negotiates (the default a 2.x client is configured with for both eras) picks 2026-07-28.
    const modern = await modernClient(acme.secret, "auto");
    expect(modern.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(legacy.getServerCapabilities()?.logging).toEqual({});
    expect((await legacy.listTools()).tools.map((tool) => tool.name)).toEqual(
      (await modern.listTools()).tools.map((tool) => tool.name),
    );
  });
});

describe("a 2026-07-28 request refused", () => {
  it("without credentials (401) or with a role that may not use the endpoint (403, with its id)", async () => {
    const none = await modernPost(acme.secret, "tools/list", {}, { authorization: null });
    expect(none.status).toBe(401);
    const observer = await modernPost(acmeWatcher.secret, "tools/list");
    expect(observer.status).toBe(403);
    expect(await observer.json()).toMatchObject({
      id: 7,
      error: { code: -32600, message: expect.stringContaining("needs the agent role") },
    });
  });

  it("when its Mcp-Method header and body disagree (400, -32020)", async () => {
    const answer = await modernPost(acme.secret, "tools/list", {}, { "mcp-method": "prompts/list" });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ id: 7, error: { code: -32020 } });
  });

  it("for a method the revision removed (404, -32601): there is no session to initialize or ping", async () => {
    for (const method of ["ping", "logging/setLevel", "resources/subscribe"]) {
      const answer = await modernPost(
        acme.secret,
        method,
        method === "ping" ? {} : { level: "info", uri: "x" },
      );
      expect(answer.status, method).toBe(404);
      expect(await answer.json(), method).toMatchObject({ error: { code: -32601 } });
    }
  });

  it("when it is not JSON by its Content-Type (415)", async () => {
    const answer = await modernPost(acme.secret, "tools/list", {}, { "content-type": "text/plain" });
    expect(answer.status).toBe(415);
  });
});
