import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { apiKey } from "../support/auth.ts";
import { startReferenceMcpServer } from "../support/reference-mcp.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Issue 45: what an MCP server behind wayfind offers besides tools — prompts, resources, resource
 * templates, completions, log messages — reaches a client of /mcp namespaced like its tools
 * (`<server>.<name>`, URIs kept), under the tools' visibility rules: what a caller may not see of a
 * server reads exactly as what the server does not have.
 */

const acme = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const bravo = apiKey("bravo-agent", { tenant: "bravo", roles: ["agent"] });

let reference: Awaited<ReturnType<typeof startReferenceMcpServer>>;
let wayfind: TestServer;
beforeAll(async () => {
  reference = await startReferenceMcpServer();
  wayfind = await startTestServer({
    auth: { allow_unauthenticated: false, api_keys: [acme.entry, bravo.entry] },
    mcp_servers: [{ name: "ref", transport: "http", url: reference.url }],
    visibility: [
      // acme may use the server, but not one of its prompts; bravo may use none of it.
      { match: { tenant: "acme" }, allow: ["*"], deny: ["ref.test_prompt_with_image"] },
      { match: { tenant: "bravo" }, allow: ["*"], deny: ["ref.*"] },
    ],
  });
}, 60_000);
afterAll(async () => {
  await wayfind?.stop();
  await reference?.close();
});

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

async function connect(secret: string): Promise<Client> {
  const client = new Client({ name: "gateway-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${wayfind.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${secret}` } },
    }),
  );
  clients.push(client);
  return client;
}

/** The JSON-RPC error a request was refused with, as the client reads it. */
async function refusal(request: Promise<unknown>): Promise<{ code: number; message: string }> {
  const error = (await request.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as { code: number; message: string } | undefined;
  if (error === undefined) throw new Error("the request was answered");
  return { code: error.code, message: error.message };
}

describe("an upstream's prompts, resources and templates", () => {
  it("are listed namespaced as its tools are, URIs kept, and read through wayfind", async () => {
    const client = await connect(acme.secret);
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual([
      "ref.test_simple_prompt",
      "ref.test_prompt_with_arguments",
      "ref.test_prompt_with_embedded_resource",
    ]);
    const { resources } = await client.listResources();
    expect(resources.map(({ uri, name }) => ({ uri, name }))).toEqual([
      { uri: "test://static-text", name: "ref.static-text" },
      { uri: "test://static-binary", name: "ref.static-binary" },
      { uri: "test://watched-resource", name: "ref.watched-resource" },
    ]);
    expect((await client.listResourceTemplates()).resourceTemplates).toEqual([
      {
        uriTemplate: "test://template/{id}/data",
        name: "ref.template-data",
        description: "Data by id.",
        mimeType: "application/json",
      },
    ]);
    const prompt = await client.getPrompt({
      name: "ref.test_prompt_with_arguments",
      arguments: { arg1: "one", arg2: "two" },
    });
    expect(JSON.stringify(prompt.messages)).toContain("one");
    expect((await client.readResource({ uri: "test://static-text" })).contents).toEqual([
      {
        uri: "test://static-text",
        mimeType: "text/plain",
        text: "This is the content of the static text resource.",
      },
    ]);
    const templated = await client.readResource({ uri: "test://template/42/data" });
    const [data] = templated.contents;
    expect(data && "text" in data ? JSON.parse(data.text) : data).toMatchObject({ id: "42" });
  });

  it("completes a prompt's argument through its server", async () => {
    const client = await connect(acme.secret);
    const completed = await client.complete({
      ref: { type: "ref/prompt", name: "ref.test_prompt_with_arguments" },
      argument: { name: "arg1", value: "pa" },
    });
    expect(completed.completion.values).toEqual(["paris", "park", "party"]);
  });
});

describe("visibility", () => {
  it("a server the caller may not use offers nothing: its prompts and resources read exactly as missing ones", async () => {
    const client = await connect(bravo.secret);
    expect(await client.listPrompts()).toEqual({ prompts: [] });
    expect(await client.listResources()).toEqual({ resources: [] });
    expect(await client.listResourceTemplates()).toEqual({ resourceTemplates: [] });
    const hidden = await refusal(client.getPrompt({ name: "ref.test_simple_prompt" }));
    const missing = await refusal(client.getPrompt({ name: "ref.test_simple_prompX" }));
    expect(hidden).toEqual({
      code: -32602,
      message: 'MCP error -32602: unknown prompt "ref.test_simple_prompt"',
    });
    expect(hidden.message.replace('prompt"', "X")).toBe(missing.message.replace('prompX"', "X"));
    const unread = await refusal(client.readResource({ uri: "test://static-text" }));
    const absent = await refusal(client.readResource({ uri: "test://static-texX" }));
    expect(unread).toEqual({
      code: -32002,
      message: 'MCP error -32002: unknown resource "test://static-text"',
    });
    expect(unread.message.replace('text"', "X")).toBe(absent.message.replace('texX"', "X"));
    const uncompleted = await refusal(
      client.complete({
        ref: { type: "ref/prompt", name: "ref.test_prompt_with_arguments" },
        argument: { name: "arg1", value: "pa" },
      }),
    );
    expect(uncompleted).toEqual({
      code: -32602,
      message: 'MCP error -32602: unknown prompt "ref.test_prompt_with_arguments"',
    });
  });

  it("a prompt the caller's rules deny is missing from the list and reads as unknown", async () => {
    const client = await connect(acme.secret);
    expect(await refusal(client.getPrompt({ name: "ref.test_prompt_with_image" }))).toEqual({
      code: -32602,
      message: 'MCP error -32602: unknown prompt "ref.test_prompt_with_image"',
    });
  });
});

describe("log messages", () => {
  it("reach the session that asked for them (logging/setLevel), at its level, under the server's namespace", async () => {
    const listening = await connect(acme.secret);
    const quiet = await connect(acme.secret);
    const heard: unknown[] = [];
    const overheard: unknown[] = [];
    listening.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (message) => void heard.push(message.params),
    );
    quiet.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (message) => void overheard.push(message.params),
    );
    await listening.setLoggingLevel("info");
    const call = { name: "tool_call", arguments: { name: "ref.test_tool_with_logging", arguments: {} } };
    await Promise.all([listening.callTool(call), quiet.callTool(call)]);
    expect(heard).toEqual([
      { level: "info", logger: "ref", data: "Tool execution started" },
      { level: "info", logger: "ref", data: "Tool processing data" },
      { level: "info", logger: "ref", data: "Tool execution completed" },
    ]);
    expect(overheard).toEqual([]);
    // Above its level: nothing.
    await listening.setLoggingLevel("warning");
    await listening.callTool(call);
    expect(heard).toHaveLength(3);
  });
});
