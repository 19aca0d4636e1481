import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING } from "../sources/mcp-servers.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Issue 45, done when: the official TypeScript SDK client connected only to wayfind uses
 * server-everything's sampling, elicitation and roots tools, and its prompts and resources, as if
 * connected to it directly.
 */

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    mcp_servers: [{ name: "everything", transport: "stdio", ...EVERYTHING() }],
  });
}, 60_000);
afterAll(() => wayfind.stop());

const clients: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

/** A client that answers sampling, elicitation and roots, as a desktop client with a model would. */
async function connectAnswering(): Promise<Client> {
  const client = new Client(
    { name: "everything-test", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: "assistant",
    model: "test-model",
    content: { type: "text", text: "sampled through wayfind" },
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: "file:///work/project", name: "project" }],
  }));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${wayfind.baseUrl}/mcp`)));
  clients.push(client);
  return client;
}

const textOf = (result: unknown) =>
  ((result as { content: { text?: string }[] }).content ?? []).map((block) => block.text ?? "").join("");

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  client.callTool({ name: "tool_call", arguments: { name: `everything.${name}`, arguments: args } });

it("runs server-everything's sampling, elicitation and roots tools with the client's own answers", async () => {
  const client = await connectAnswering();
  expect(textOf(await call(client, "trigger-sampling-request", { prompt: "hello", maxTokens: 5 }))).toContain(
    "sampled through wayfind",
  );
  const elicited = textOf(await call(client, "trigger-elicitation-request"));
  expect(elicited).toContain("User provided the requested information");
  expect(elicited).toContain("Ada");
  expect(textOf(await call(client, "get-roots-list"))).toContain("URI: file:///work/project");
}, 30_000);

it("offers server-everything's prompts and resources, namespaced, read through wayfind", async () => {
  const client = await connectAnswering();
  const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  expect(prompts).toContain("everything.simple-prompt");
  const prompt = await client.getPrompt({ name: "everything.simple-prompt" });
  expect(prompt.messages.length).toBeGreaterThan(0);
  const { resources } = await client.listResources();
  const first = resources[0];
  expect(first?.name.startsWith("everything.")).toBe(true);
  const read = await client.readResource({ uri: String(first?.uri) });
  expect(read.contents[0]?.uri).toBe(first?.uri);
}, 30_000);

// A 2026-07-28 client: the same tools, its questions answered over rounds (docs/mcp.md "Questions over rounds").
/** The 2.x SDK client, pinned to 2026-07-28, answering sampling, elicitation and roots on its own. */
async function answeringClient(): Promise<ModernClient> {
  const client = new ModernClient(
    { name: "rounds-test", version: "1.0.0" },
    {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} },
    },
  );
  client.setRequestHandler("sampling/createMessage", async () => ({
    role: "assistant",
    model: "test-model",
    content: { type: "text", text: "sampled through wayfind" },
  }));
  client.setRequestHandler("elicitation/create", async () => ({
    action: "accept",
    content: { name: "Ada" },
  }));
  client.setRequestHandler("roots/list", async () => ({
    roots: [{ uri: "file:///work/project", name: "project" }],
  }));
  await client.connect(new ModernTransport(new URL(`${wayfind.baseUrl}/mcp`)));
  clients.push(client);
  return client;
}

const META = (capabilities: Record<string, unknown>) => ({
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": capabilities,
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
});

/** One raw tools/call of tool_call on `tool`, as `tenant`, with what else `extra` adds to params. */
async function rawCall(tool: string, extra: Record<string, unknown> = {}, tenant = "acme") {
  const answer = await fetch(`${wayfind.baseUrl}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "tool_call",
      "wayfind-tenant": tenant,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: {
        name: "tool_call",
        arguments: { name: `everything.${tool}`, arguments: {} },
        _meta: META({ elicitation: { form: {} } }),
        ...extra,
      },
    }),
  });
  const text = await answer.text();
  // A JSON body, or an SSE stream whose last data line is the answer.
  const json = text.startsWith("{")
    ? text
    : (
        text
          .split("\n")
          .filter((l) => l.startsWith("data: "))
          .at(-1) ?? ""
      ).slice(6);
  return JSON.parse(json) as {
    result?: {
      resultType?: string;
      inputRequests?: Record<string, { method: string }>;
      requestState?: string;
    };
    error?: { code: number; message: string };
  };
}

describe("questions over rounds", () => {
  it("runs server-everything's sampling, elicitation and roots tools for a client that answers input_required", async () => {
    const client = await answeringClient();
    const call = (name: string, args: Record<string, unknown> = {}) =>
      client.callTool({ name: "tool_call", arguments: { name: `everything.${name}`, arguments: args } });
    expect(textOf(await call("trigger-sampling-request", { prompt: "hello", maxTokens: 5 }))).toContain(
      "sampled through wayfind",
    );
    const elicited = textOf(await call("trigger-elicitation-request"));
    expect(elicited).toContain("Ada");
    expect(textOf(await call("get-roots-list"))).toContain("URI: file:///work/project");
  }, 60_000);

  it("answers input_required with the server's question and a signed state, and the retry with the call's result", async () => {
    const first = await rawCall("trigger-elicitation-request");
    expect(first.result?.resultType).toBe("input_required");
    const [key, asked] = Object.entries(first.result?.inputRequests ?? {})[0] ?? [];
    expect(asked?.method).toBe("elicitation/create");
    const state = first.result?.requestState ?? "";
    const second = await rawCall("trigger-elicitation-request", {
      inputResponses: { [String(key)]: { action: "accept", content: { name: "Grace" } } },
      requestState: state,
    });
    expect(JSON.stringify(second.result)).toContain("Grace");
    // The call has ended: its state is spent.
    const replayed = await rawCall("trigger-elicitation-request", {
      inputResponses: { [String(key)]: { action: "accept", content: {} } },
      requestState: state,
    });
    expect(replayed.error?.code).toBe(-32602);
  }, 60_000);

  it("refuses a tampered state, and another tenant's, in the same words, and the call still waits for its own", async () => {
    const first = await rawCall("trigger-elicitation-request");
    const state = first.result?.requestState ?? "";
    const [key] = Object.keys(first.result?.inputRequests ?? {});
    const flipped = `${state.slice(0, 10)}${state[10] === "A" ? "B" : "A"}${state.slice(11)}`;
    const tampered = await rawCall("trigger-elicitation-request", {
      inputResponses: {},
      requestState: flipped,
    });
    const foreign = await rawCall(
      "trigger-elicitation-request",
      { inputResponses: {}, requestState: state },
      "bravo",
    );
    expect(tampered.error?.code).toBe(-32602);
    expect(foreign.error).toEqual(tampered.error);
    const own = await rawCall("trigger-elicitation-request", {
      inputResponses: { [String(key)]: { action: "accept", content: { name: "Lin" } } },
      requestState: state,
    });
    expect(JSON.stringify(own.result)).toContain("Lin");
  }, 60_000);

  it("asks again for what a retry left unanswered", async () => {
    const first = await rawCall("trigger-elicitation-request");
    const again = await rawCall("trigger-elicitation-request", {
      inputResponses: {},
      requestState: first.result?.requestState,
    });
    expect(again.result?.resultType).toBe("input_required");
    expect(Object.keys(again.result?.inputRequests ?? {})).toEqual(
      Object.keys(first.result?.inputRequests ?? {}),
    );
    expect(again.result?.requestState).not.toBe(first.result?.requestState);
  }, 60_000);
});
