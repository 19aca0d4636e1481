import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerOf } from "../support/mcp-answer.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { TLS_FIXTURES } from "../support/tls.ts";

// /mcp takes a verified client certificate (auth.mtls) as its credential, as every RPC does.
const pem = (name: string) => readFileSync(join(TLS_FIXTURES, `${name}.pem`));
const dataDir = mkdtempSync(join(tmpdir(), "wayfind-mcp-mtls-"));
let wayfind: TestServer;

beforeAll(async () => {
  const tool = { name: "restart", description: "Restart a service by name.", parameters: { type: "object" } };
  writeFileSync(join(dataDir, "ops.jsonl"), `${JSON.stringify(tool)}\n`);
  wayfind = await startTestServer(
    {
      catalogs: [{ path: "ops.jsonl", namespace: "ops", loading_mode: "deferred" }],
      server: {
        tls: { cert_file: join(TLS_FIXTURES, "server.pem"), key_file: join(TLS_FIXTURES, "server-key.pem") },
      },
      auth: {
        allow_unauthenticated: false,
        mtls: {
          client_ca: join(TLS_FIXTURES, "ca.pem"),
          principal_from: "san_uri",
          principals: { "spiffe://acme/agent-1": { tenant: "acme", roles: ["agent"] } },
        },
      },
    },
    { dataDir },
  );
});
afterAll(async () => {
  await wayfind?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** POSTs JSON-RPC to /mcp over HTTPS, presenting `client`'s certificate (none when undefined). */
function post(client: string | undefined, body: object, session?: string) {
  const credentials = client ? { cert: pem(client), key: pem(`${client}-key`) } : {};
  return new Promise<{ status: number; session: string; body: string }>((resolve, reject) => {
    const request = https.request(
      {
        host: "127.0.0.1",
        servername: "localhost",
        port: wayfind.port,
        path: "/mcp",
        method: "POST",
        ca: pem("ca"),
        ...credentials,
        agent: false,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          host: `localhost:${wayfind.port}`,
          ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" } : {}),
        },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            session: String(response.headers["mcp-session-id"] ?? ""),
            body: text,
          }),
        );
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "mtls", version: "1" } },
};
const SEARCH = {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "tool_search", arguments: { query: "restart a service" } },
};

describe("/mcp with client certificates (auth.mtls)", () => {
  it("opens a session for a certificate the server maps, and acts as its principal", async () => {
    const opened = await post("client-agent", INITIALIZE);
    expect(opened.status).toBe(200);
    await post("client-agent", { jsonrpc: "2.0", method: "notifications/initialized" }, opened.session);
    const found = await post("client-agent", SEARCH, opened.session);
    expect(answerOf(found.body).result.content[0].text).toContain("ops.restart");
  });

  it("refuses an initialize without a certificate, saying what credentials it takes", async () => {
    const refused = await post(undefined, INITIALIZE);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatch(/client certificate/);
  });

  it("does not let a connection without the certificate use a session opened with it", async () => {
    const opened = await post("client-agent", INITIALIZE);
    // Credentials are checked before the session is looked up: none at all is 401, session or not.
    const hijack = await post(undefined, SEARCH, opened.session);
    expect(hijack.status).toBe(401);
  });
});
