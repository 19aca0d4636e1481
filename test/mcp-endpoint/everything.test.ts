import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
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

const clients: Client[] = [];
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
