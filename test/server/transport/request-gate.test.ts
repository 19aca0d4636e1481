import { once } from "node:events";
import * as http from "node:http";
import * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health } from "../../../gen/ts/grpc/health/v1/health_pb.ts";
import { KeyService } from "../../../gen/ts/wayfind/v1/keys_pb.ts";
import { ToolDiscoveryService } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey } from "../../support/auth.ts";
import { openRaw } from "../../support/raw-http.ts";
import { rawGrpcStatus } from "../../support/rpc.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

/**
 * The request gate (src/server/transport/request-gate.ts) in front of every path: a page whose site rebinds
 * its own name to this server's address reaches it with its own name as Host, and a browser sends
 * its same-origin GETs without an Origin, so the Host alone must decide.
 */

interface Answer {
  status: number;
  body: string;
}

/** One HTTP/1.1 GET with exactly these headers (fetch would not let us set Host). */
function get(port: number, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port, path, headers }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

const LIST_KEYS_GET = `/${KeyService.typeName}/ListApiKeys?connect=v1&encoding=json&message=%7B%7D`;

describe("a loopback server that serves calls without credentials (the quick start)", () => {
  let wayfind: TestServer;
  beforeAll(async () => {
    wayfind = await startTestServer();
  });
  afterAll(() => wayfind.stop());

  it("refuses a rebinding page's same-origin GET, which carries no Origin (issue 42: ListApiKeys read as the operator)", async () => {
    const answer = await get(wayfind.port, LIST_KEYS_GET, {
      host: `evil.example:${wayfind.port}`,
      "wayfind-role": "admin",
    });
    expect(answer.status).toBe(403);
    expect(answer.body).toContain("DNS rebinding");
    expect(answer.body).not.toContain("keys");
  });

  it.each(["/metrics", "/console", "/healthz", "/mcp"])(
    "refuses the rebound name on %s too",
    async (path) => {
      const answer = await get(wayfind.port, path, { host: `evil.example:${wayfind.port}` });
      expect(answer.status).toBe(403);
    },
  );

  it.each([
    ["an empty Host", "POST /mcp HTTP/1.1\r\nHost: \r\n"],
    ["no Host (HTTP/1.0)", "POST /mcp HTTP/1.0\r\n"],
  ])("refuses an MCP initialize that names no host: %s", async (_case, head) => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "probe", version: "1" },
      },
    });
    const connection = await openRaw(wayfind.port);
    connection.socket.end(
      `${head}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.[01] 403 /);
    expect(connection.received()).toContain("A request without a Host header is refused");
    expect(connection.received()).not.toContain("protocolVersion");
  });

  it("refuses a native gRPC call sent to a rebound name", async () => {
    const status = await rawGrpcStatus(wayfind.baseUrl, `/${Health.typeName}/Check`, [new Uint8Array(5)], {
      ":authority": `evil.example:${wayfind.port}`,
    });
    expect(status.code).toBe(Code.PermissionDenied);
    expect(status.message).toContain("DNS rebinding");
  });

  it.each(["127.0.0.1", "localhost", "[::1]"])(
    "answers curl and native clients that reach it as %s",
    async (name) => {
      const answer = await get(wayfind.port, LIST_KEYS_GET, {
        host: `${name}:${wayfind.port}`,
        "wayfind-role": "admin",
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({});
    },
  );
});

describe("a loopback server with server.allowed_hosts", () => {
  let wayfind: TestServer;
  beforeAll(async () => {
    wayfind = await startTestServer({ server: { allowed_hosts: ["wayfind.internal"] } });
  });
  afterAll(() => wayfind.stop());

  it("answers the names it lists too, and no other", async () => {
    expect((await get(wayfind.port, "/healthz", { host: `wayfind.internal:${wayfind.port}` })).status).toBe(
      200,
    );
    expect((await get(wayfind.port, "/healthz", { host: `wayfind.example:${wayfind.port}` })).status).toBe(
      403,
    );
  });
});

const operator = apiKey("operator", { roles: ["admin"] });
const withKey = { authorization: `Bearer ${operator.secret}` };

describe("a server on every interface that requires credentials", () => {
  let open: TestServer;
  beforeAll(async () => {
    open = await startTestServer({ server: { host: "0.0.0.0" }, auth: { api_keys: [operator.entry] } });
  });
  afterAll(() => open.stop());

  it("answers an RPC with refused credentials before reading its body (issue 42: authentication before buffering)", async () => {
    const connection = await openRaw(open.port);
    connection.socket.write(
      `POST /${ToolDiscoveryService.typeName}/RegisterTools HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
        "Content-Type: application/proto\r\nContent-Length: 4000000\r\n\r\n",
    );
    connection.socket.write(Buffer.alloc(64 * 1024));
    await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(connection.received()).toContain("this server requires credentials");
    // Native gRPC alike: answered while the message is still coming.
    const session = http2.connect(open.baseUrl);
    const stream = session.request(
      {
        ":method": "POST",
        ":path": `/${ToolDiscoveryService.typeName}/RegisterTools`,
        "content-type": "application/grpc",
        te: "trailers",
        authorization: "Bearer wf_unknown",
      },
      { endStream: false },
    );
    stream.on("error", () => {});
    stream.write(Buffer.concat([Buffer.from([0, 0, 0x3d, 0x09, 0x00]), Buffer.alloc(1024)]));
    const [headers] = (await once(stream, "response")) as [http2.IncomingHttpHeaders];
    session.close();
    expect(headers["grpc-status"]).toBe(String(Code.Unauthenticated));
    expect(decodeURIComponent(String(headers["grpc-message"]))).toBe("API key is not known to this server");
  });

  it("answers a request that names no host, as it answers any name", async () => {
    const connection = await openRaw(open.port);
    connection.socket.end("GET /healthz HTTP/1.0\r\n\r\n");
    await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.[01] 200 /);
  });

  it("answers any name it is reached by, as a server behind a load balancer must", async () => {
    const answer = await get(open.port, LIST_KEYS_GET, { ...withKey, host: "wayfind.example.com" });
    expect(answer.status).toBe(200);
  });
});

describe("a server on every interface with server.allowed_hosts", () => {
  let listed: TestServer;
  beforeAll(async () => {
    listed = await startTestServer({
      server: { host: "0.0.0.0", allowed_hosts: ["wayfind.example.com"] },
      auth: { api_keys: [operator.entry] },
    });
  });
  afterAll(() => listed.stop());

  it("answers only the names it lists (and addresses)", async () => {
    expect((await get(listed.port, LIST_KEYS_GET, { ...withKey, host: "wayfind.example.com" })).status).toBe(
      200,
    );
    expect(
      (await get(listed.port, LIST_KEYS_GET, { ...withKey, host: `127.0.0.1:${listed.port}` })).status,
    ).toBe(200);
    const other = await get(listed.port, LIST_KEYS_GET, { ...withKey, host: "other.example.com" });
    expect(other.status).toBe(403);
    expect(other.body).toContain("server.allowed_hosts");
  });
});
