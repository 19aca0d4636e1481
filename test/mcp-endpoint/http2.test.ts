import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerOf } from "../support/mcp-answer.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// /mcp over HTTP/2 (h2c here; TLS with ALPN h2 is the same path): what clients such as curl
// negotiate on an https:// URL by default.
const dataDir = mkdtempSync(join(tmpdir(), "wayfind-mcp-h2-"));
let wayfind: TestServer;
let client: http2.ClientHttp2Session;

beforeAll(async () => {
  const tool = { name: "restart", description: "Restart a service by name.", parameters: { type: "object" } };
  writeFileSync(join(dataDir, "ops.jsonl"), `${JSON.stringify(tool)}\n`);
  wayfind = await startTestServer({ catalogs: [{ path: "ops.jsonl", namespace: "ops" }] }, { dataDir });
  client = http2.connect(wayfind.baseUrl);
});
afterAll(async () => {
  client?.close();
  await wayfind?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

function send(headers: http2.OutgoingHttpHeaders, body?: object): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = client.request(headers);
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let text = "";
    stream.setEncoding("utf8");
    stream.on("response", (received) => {
      responseHeaders = received;
      status = Number(received[":status"]);
    });
    stream.on("data", (chunk: string) => {
      text += chunk;
    });
    stream.on("end", () => resolve({ status, headers: responseHeaders, body: text }));
    stream.on("error", reject);
    stream.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

function post(body: object, session?: string): Promise<Answer> {
  return send(
    {
      ":method": "POST",
      ":path": "/mcp",
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" } : {}),
    },
    body,
  );
}

describe("the MCP endpoint over HTTP/2", () => {
  it("initializes a session, lists its tools and finds a tool with tool_search", async () => {
    const initialized = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "h2", version: "1" } },
    });
    expect(initialized.status).toBe(200);
    const session = String(initialized.headers["mcp-session-id"]);
    expect(answerOf(initialized.body).result.serverInfo.name).toBe("wayfind");
    expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session)).status).toBe(202);

    const listed = answerOf((await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, session)).body);
    expect(listed.result.tools.map((tool: { name: string }) => tool.name)).toContain("tool_search");

    const found = await post(
      {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "tool_search", arguments: { query: "restart a service" } },
      },
      session,
    );
    expect(answerOf(found.body).result.content[0].text).toContain("ops.restart");
  });
});
