import { request } from "node:http";
import { Code } from "@connectrpc/connect";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  ProgressNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { EVERYTHING } from "../sources/mcp-servers.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { endpointFixtureDir } from "../support/mcp-session.ts";
import { openRaw } from "../support/raw-http.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * wayfind's MCP endpoint with the official SDK client over Streamable HTTP: a client configured with
 * only wayfind finds, loads and calls the tools of the MCP servers behind it that its credential may
 * use, and nothing else.
 */

const acme = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const bravo = apiKey("bravo-agent", { tenant: "bravo", roles: ["agent", "observer"] });
const acmeWatcher = apiKey("acme-observer", { tenant: "acme", roles: ["observer"] });

let wayfind: TestServer;
beforeAll(async () => {
  const dir = endpointFixtureDir();
  wayfind = await startTestServer(
    {
      skill_packs: [{ name: "core", path: "skills" }],
      auth: { allow_unauthenticated: false, api_keys: [acme.entry, bravo.entry, acmeWatcher.entry] },
      catalogs: [{ path: "ops.jsonl", namespace: "ops", loading_mode: "always" }],
      mcp_servers: [{ name: "everything", transport: "stdio", ...EVERYTHING() }],
      // bravo may not use the everything server: its tools must look missing to bravo.
      visibility: [
        { match: { tenant: "acme" }, allow: ["*"] },
        { match: { tenant: "bravo" }, allow: ["*"], deny: ["everything.*"] },
      ],
    },
    { dataDir: dir },
  );
}, 60_000);
afterAll(() => wayfind.stop());

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

/** An SDK client connected to wayfind's /mcp (with `query`, e.g. `?tool_list=activated`) with `secret`. */
async function connect(secret: string, query = ""): Promise<Client> {
  const client = new Client({ name: "endpoint-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${wayfind.baseUrl}/mcp${query}`), {
    requestInit: { headers: { authorization: `Bearer ${secret}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const textOf = (result: unknown) =>
  ((result as { content: { text?: string }[] }).content ?? []).map((block) => block.text ?? "").join("");

/** POSTs a raw JSON-RPC body to /mcp, with acme's key unless `authorization` says otherwise (null: none). */
function post(body: string, headers: Record<string, string | null> = {}) {
  const sent: Record<string, string | null> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${acme.secret}`,
    ...headers,
  };
  return fetch(`${wayfind.baseUrl}/mcp`, {
    method: "POST",
    headers: Object.fromEntries(
      Object.entries(sent).filter((entry): entry is [string, string] => entry[1] !== null),
    ),
    body,
  });
}

/** The JSON-RPC error of an answer wayfind gave over plain HTTP. */
async function rpcError(response: Response): Promise<{ code: number; message: string }> {
  return ((await response.json()) as { error: { code: number; message: string } }).error;
}

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

describe("tools/list", () => {
  it("lists the discovery tools, tool_call and the caller's always-visible tools, the same on every call", async () => {
    const client = await connect(acme.secret);
    const first = await client.listTools();
    expect(first.tools.map((tool) => tool.name)).toEqual([
      "tool_search",
      "tool_get",
      "tool_call",
      "skill_search",
      "skill_get",
      "skill_list",
      "ops.restart",
    ]);
    await client.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } });
    expect(await client.listTools()).toEqual(first);
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(false);
  });
});

describe("the activated tool list (?tool_list=activated)", () => {
  it("adds the tools tool_get loads, announces the change ahead of the result, and calls them by name", async () => {
    const client = await connect(acme.secret, "?tool_list=activated");
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    const before = (await client.listTools()).tools.map((tool) => tool.name);
    expect(before).not.toContain("everything.echo");
    let announced = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void announced++);

    await client.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } });
    expect(announced).toBe(1);
    const after = (await client.listTools()).tools;
    expect(after.map((tool) => tool.name)).toEqual([...before, "everything.echo"]);
    expect(after.at(-1)?.inputSchema.required).toEqual(["message"]);
    const called = await client.callTool({ name: "everything.echo", arguments: { message: "first-class" } });
    expect(called.content).toEqual([{ type: "text", text: "Echo: first-class" }]);

    // Loading it again changes nothing, so nothing is announced.
    await client.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } });
    expect(announced).toBe(1);
  }, 30_000);

  it("keeps each session's activated tools to that session", async () => {
    const loader = await connect(acme.secret, "?tool_list=activated");
    await loader.listTools();
    await loader.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } });
    const other = await connect(acme.secret, "?tool_list=activated");
    expect((await other.listTools()).tools.map((tool) => tool.name)).not.toContain("everything.echo");
  }, 30_000);

  it("refuses a tool list that does not exist, naming the ones that do", async () => {
    const response = await fetch(`${wayfind.baseUrl}/mcp?tool_list=everything`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${acme.secret}`,
      },
      body: initialize,
    });
    expect(response.status).toBe(400);
    expect((await rpcError(response)).message).toBe(
      "tool_list=everything is not a tool list: use tool_list=fixed or tool_list=activated",
    );
  });
});

describe("find, load and call", () => {
  it("finds an upstream tool with tool_search, loads its schema with tool_get and calls it with tool_call", async () => {
    const client = await connect(acme.secret);
    const found = JSON.parse(
      textOf(await client.callTool({ name: "tool_search", arguments: { query: "echo a message back" } })),
    );
    expect(found.tools[0].name).toBe("everything.echo");
    const loaded = JSON.parse(
      textOf(await client.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } })),
    );
    expect(loaded.tools[0].input_schema.required).toEqual(["message"]);
    const called = await client.callTool({
      name: "tool_call",
      arguments: { name: "everything.echo", arguments: { message: "hello through wayfind" } },
    });
    expect(called).toEqual({ content: [{ type: "text", text: "Echo: hello through wayfind" }] });
  }, 30_000);

  it("passes on the progress the upstream server reports while a call runs, ahead of the result", async () => {
    const client = await connect(acme.secret);
    // The SDK's own onprogress misses a report read together with the result; a handler of the
    // notification sees every one.
    const reported: unknown[] = [];
    client.setNotificationHandler(ProgressNotificationSchema, ({ params }) => void reported.push(params));
    const called = await client.request(
      {
        method: "tools/call",
        params: {
          name: "tool_call",
          arguments: {
            name: "everything.trigger-long-running-operation",
            arguments: { duration: 0.3, steps: 3 },
          },
          _meta: { progressToken: "long-1" },
        },
      },
      CallToolResultSchema,
    );
    expect(textOf(called)).toContain("Long running operation completed");
    expect(reported).toEqual([1, 2, 3].map((progress) => ({ progressToken: "long-1", progress, total: 3 })));
  }, 30_000);

  it("records each call as a tool_called event and in wayfind_tool_calls_total", async () => {
    const client = await connect(acme.secret);
    const watcher = clientWith(ToolDiscoveryService, wayfind.baseUrl, acmeWatcher.secret);
    const stream = watcher.watchToolEvents({ filter: { types: ["tool_called"] } })[Symbol.asyncIterator]();
    await stream.next(); // the status
    await client.callTool({
      name: "tool_call",
      arguments: { name: "everything.echo", arguments: { message: "counted" } },
    });
    const event = (await stream.next()).value;
    await stream.return?.();
    expect(event?.message).toMatchObject({
      case: "event",
      value: {
        type: "tool_called",
        tenantId: "acme",
        payload: {
          case: "toolCalled",
          value: { tool: "everything.echo", source: "mcp:everything", outcome: "ok" },
        },
      },
    });
    const metrics = await (await fetch(`${wayfind.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/wayfind_tool_calls_total\{source="mcp:everything",outcome="ok"\} [1-9]/);
  }, 30_000);

  it("answers arguments that do not fit the schema with isError and what to fix, sending nothing upstream", async () => {
    const client = await connect(acme.secret);
    const result = await client.callTool({
      name: "tool_call",
      arguments: { name: "everything.echo", arguments: { msg: "x" } },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("must have required property 'message'");
  });

  it("says that a tool of a catalog file is run by the agent runtime, not by wayfind", async () => {
    const client = await connect(acme.secret);
    const result = await client.callTool({ name: "ops.restart", arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("not from an MCP server");
  });

  it("answers a tool it never listed with a JSON-RPC error, its code said once (issue 45: it was doubled)", async () => {
    const client = await connect(acme.secret);
    const error = await client.callTool({ name: "everything.echo", arguments: { message: "x" } }).then(
      () => undefined,
      (thrown: unknown) => thrown as { code: number; message: string },
    );
    expect({ code: error?.code, message: error?.message }).toEqual({
      code: -32602,
      message:
        'MCP error -32602: unknown tool "everything.echo": find tools with tool_search, call them with tool_call',
    });
  });
});

describe("the meta tools' enum arguments (the API's enum maps, src/api-enums)", () => {
  it("searches the way tool_search's search_type names", async () => {
    const client = await connect(acme.secret);
    const search = async (args: Record<string, unknown>) =>
      JSON.parse(textOf(await client.callTool({ name: "tool_search", arguments: args }))).tools.map(
        (tool: { name: string }) => tool.name,
      );
    expect(await search({ query: "^everything\\.ech", search_type: "regex" })).toEqual(["everything.echo"]);
    expect(await search({ query: "^everything\\.ech", search_type: "exact" })).toEqual([]);
  });

  it("lists the skills of the task_type skill_list names", async () => {
    const client = await connect(acme.secret);
    const list = async (taskType: string) =>
      JSON.parse(
        textOf(await client.callTool({ name: "skill_list", arguments: { task_type: taskType } })),
      ).skills.map((skill: { name: string }) => skill.name);
    expect(await list("api")).toEqual([expect.stringContaining("paginate")]);
    expect(await list("code")).toEqual([]);
  });
});

describe("prompts", () => {
  it("offers the skills as prompts, each with its text ready to inject", async () => {
    const client = await connect(acme.secret);
    const { prompts } = await client.listPrompts();
    const paginate = prompts.find((prompt) => prompt.name.includes("paginate"));
    expect(paginate?.description).toBeTruthy();
    const prompt = await client.getPrompt({ name: paginate?.name ?? "" });
    expect(prompt.messages[0]?.content).toMatchObject({
      type: "text",
      text: expect.stringContaining("cursor"),
    });
    await expect(client.getPrompt({ name: "no.such.skill" })).rejects.toThrow(/unknown prompt/);
  });
});

describe("resources", () => {
  it("offers the skills as skill:// documents a client can attach, each read as its text", async () => {
    const client = await connect(acme.secret);
    const { resources } = await client.listResources();
    const paginate = resources.find((resource) => resource.name.includes("paginate"));
    // Each skill is its SKILL.md (the skills extension's file: test/mcp-endpoint/skills.test.ts).
    expect(paginate?.uri).toBe(`skill://pack/core/${paginate?.name}/SKILL.md`);
    expect(paginate?.mimeType).toBe("text/markdown");
    const read = await client.readResource({ uri: paginate?.uri ?? "" });
    expect(read.contents[0]).toMatchObject({ uri: paginate?.uri, text: expect.stringContaining("cursor") });
  });

  it("answers an unknown resource with the specification's not-found error", async () => {
    const client = await connect(acme.secret);
    await expect(client.readResource({ uri: "skill://no.such.skill" })).rejects.toMatchObject({
      code: -32002,
    });
    await expect(client.readResource({ uri: "file:///etc/passwd" })).rejects.toMatchObject({ code: -32002 });
  });
});

describe("tenants", () => {
  it("hides another tenant's tools from search, tool_get and tool_call, exactly as missing ones", async () => {
    const client = await connect(bravo.secret);
    const found = JSON.parse(
      textOf(await client.callTool({ name: "tool_search", arguments: { query: "echo" } })),
    );
    expect(found.tools.map((t: { name: string }) => t.name)).not.toContain("everything.echo");
    const loaded = JSON.parse(
      textOf(await client.callTool({ name: "tool_get", arguments: { names: ["everything.echo"] } })),
    );
    expect(loaded).toEqual({ tools: [], not_found: ["everything.echo"] });
    const hidden = await client.callTool({
      name: "tool_call",
      arguments: { name: "everything.echo", arguments: { message: "x" } },
    });
    const missing = await client.callTool({
      name: "tool_call",
      arguments: { name: "everything.echoo", arguments: { message: "x" } },
    });
    expect(hidden.isError).toBe(true);
    expect(textOf(hidden).replace("echo", "X")).toBe(textOf(missing).replace("echoo", "X"));
  });

  it("refuses an observer's initialize (403) saying the endpoint needs the agent role, not each request after", async () => {
    const refused = await post(initialize, { authorization: `Bearer ${acmeWatcher.secret}` });
    expect(refused.status).toBe(403);
    expect(await rpcError(refused)).toEqual({
      code: -32600,
      message:
        "wayfind's MCP endpoint needs the agent role; this credential has role observer " +
        "(observers read tool sources, usage and events over the API and in the console)",
    });
    expect(refused.headers.get("mcp-session-id")).toBeNull();
  });
});

describe("sessions and bad input", () => {
  it("refuses initialize without credentials the server accepts (401), saying why", async () => {
    const none = await post(initialize, { authorization: null });
    expect(none.status).toBe(401);
    expect((await rpcError(none)).message).toContain("requires credentials");
    const wrong = await post(initialize, { authorization: "Bearer wf_not-a-key" });
    expect(wrong.status).toBe(401);
  });

  it("keeps a session to the credential that opened it: another credential's request does not find it", async () => {
    const opened = await post(initialize);
    const session = opened.headers.get("mcp-session-id") ?? "";
    expect(session).not.toBe("");
    const list = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const other = await post(list, { "mcp-session-id": session, authorization: `Bearer ${bravo.secret}` });
    expect(other.status).toBe(404);
    const unknown = await post(list, { "mcp-session-id": "no-such-session" });
    expect(unknown.status).toBe(404);
  });

  it("answers a body that is not JSON with a parse error, and one past the size limit with 413", async () => {
    const garbage = await post("{not json");
    expect(garbage.status).toBe(400);
    expect((await rpcError(garbage)).code).toBe(-32700);
    const huge = await post(`"${"x".repeat(wayfind.config.server.maxMessageBytes + 1)}"`);
    expect(huge.status).toBe(413);
  });

  it("refuses what a web page could send: a Host that is not loopback (DNS rebinding) or a foreign Origin", async () => {
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const sent = request(
          `${wayfind.baseUrl}/mcp`,
          {
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              authorization: `Bearer ${acme.secret}`,
              ...headers,
            },
          },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        sent.on("error", reject);
        sent.end(initialize);
      });
    expect(await status({ host: "attacker.example" })).toBe(403);
    expect(await status({ origin: "http://attacker.example" })).toBe(403);
    expect(await status({ origin: `http://localhost:${wayfind.port}` })).toBe(200);
  });

  it("opens a new session after the client ends one, and the ended one is gone", async () => {
    const client = await connect(acme.secret);
    const transport = client.transport as StreamableHTTPClientTransport;
    const ended = transport.sessionId ?? "";
    await transport.terminateSession();
    const list = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect((await post(list, { "mcp-session-id": ended })).status).toBe(404);
    const again = await connect(acme.secret);
    expect((await again.listTools()).tools.length).toBeGreaterThan(0);
  });
});

describe("issue 42: what an attacker sends to /mcp", () => {
  /** A session of acme's, initialized, for raw requests. */
  async function openSession(): Promise<string> {
    const opened = await post(initialize);
    const session = opened.headers.get("mcp-session-id") ?? "";
    await post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), {
      "mcp-session-id": session,
    });
    return session;
  }

  it("answers a request without credentials before reading its body, and closes the connection (50 such 4 MB bodies took 345 MB)", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${wayfind.port}\r\nContent-Type: application/json\r\n` +
        "Accept: application/json, text/event-stream\r\nContent-Length: 4000000\r\n\r\n",
    );
    connection.socket.write(Buffer.alloc(64 * 1024, " "));
    await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(connection.received()).toContain("requires credentials");
  });

  it("refuses a body declared larger than server.max_message_bytes unread", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${wayfind.port}\r\nAuthorization: Bearer ${acme.secret}\r\n` +
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
        `Content-Length: ${wayfind.config.server.maxMessageBytes + 1}\r\n\r\n{`,
    );
    await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 413 /);
  });

  it.each([
    ["null", "null"],
    ["a number", "42"],
    ["an empty batch", "[]"],
    ["an object that is no JSON-RPC message", '{"hello":"world"}'],
  ])("answers %s on a session with -32600 Invalid Request (null was never answered)", async (_, body) => {
    const session = await openSession();
    const response = await post(body, { "mcp-session-id": session });
    expect(response.status).toBe(400);
    const error = await rpcError(response);
    expect(error.code).toBe(-32600);
    expect(error.message).toMatch(/^Invalid Request: /);
  });

  it("answers invalid tools/call params with -32602 naming what is wrong, not -32603 with the validator's dump", async () => {
    const session = await openSession();
    const response = await post(
      JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: 5 } }),
      { "mcp-session-id": session },
    );
    const answer = (await response.json()) as { id: number; error: { code: number; message: string } };
    expect(answer.id).toBe(7);
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toBe(
      "Invalid params of tools/call: params.name: Invalid input: expected string, received number",
    );
  });

  it("refuses tool_call arguments nested 1,000 deep in the words CallTool uses (it overflowed the stack: -32603)", async () => {
    const nested = (levels: number) => {
      let value: Record<string, unknown> = { message: "bottom" };
      for (let level = 1; level < levels; level++) value = { nested: value };
      return value;
    };
    const client = await connect(acme.secret);
    const viaToolCall = async (levels: number) =>
      client.callTool({
        name: "tool_call",
        arguments: { name: "everything.echo", arguments: nested(levels) },
      });
    const deepest = await viaToolCall(1_000);
    expect(deepest.isError).toBe(true);
    expect(textOf(deepest)).toBe("arguments must have 1–32 levels of nesting; these have more");
    // CallTool's own decoder refuses past ~50 levels; between, the one check answers both alike.
    const viaRpc = await failure(
      clientWith(ToolDiscoveryService, wayfind.baseUrl, acme.secret, "connect").callTool({
        name: "everything.echo",
        arguments: nested(40) as never,
      }),
    );
    expect(viaRpc.code).toBe(Code.InvalidArgument);
    expect(viaRpc.rawMessage).toBe(textOf(await viaToolCall(40)));
  });
});
