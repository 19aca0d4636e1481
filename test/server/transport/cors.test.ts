import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../support/server.ts";

const CONSOLE_SITE = "https://console.example.com";
const SEARCH_PATH = "/wayfind.v1.ToolDiscoveryService/SearchTools";

let wayfind: TestServer;
const dataDir = mkdtempSync(join(tmpdir(), "wayfind-cors-"));
beforeAll(async () => {
  const tool = { name: "weather.get", description: "Current weather for a city", loading_mode: "deferred" };
  writeFileSync(join(dataDir, "weather.jsonl"), `${JSON.stringify(tool)}\n`);
  wayfind = await startTestServer(
    {
      server: { cors: { allowed_origins: [CONSOLE_SITE], max_age: 120 } },
      catalogs: [{ path: "weather.jsonl" }],
    },
    { dataDir },
  );
});
afterAll(async () => {
  await wayfind.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One HTTP/1.1 request with the headers a browser would send (fetch would not let us set Origin or Host). */
function send(method: string, path: string, headers: Record<string, string>, body = ""): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: "127.0.0.1", port: wayfind.port, method, path, headers },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }),
        );
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

function preflight(origin: string): Promise<Answer> {
  return send("OPTIONS", SEARCH_PATH, {
    origin,
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type, connect-protocol-version, authorization",
  });
}

function search(headers: Record<string, string>): Promise<Answer> {
  return send(
    "POST",
    SEARCH_PATH,
    { "content-type": "application/json", "connect-protocol-version": "1", ...headers },
    JSON.stringify({ caller: { tenantId: "acme" }, query: "weather" }),
  );
}

describe("web pages calling the API (server.cors)", () => {
  it("answers an allowed origin's preflight with the methods, headers and max age it may use", async () => {
    const answer = await preflight(CONSOLE_SITE);
    expect(answer.status).toBe(204);
    expect(answer.headers["access-control-allow-origin"]).toBe(CONSOLE_SITE);
    expect(answer.headers["access-control-allow-methods"]).toBe("POST, GET");
    expect(answer.headers["access-control-allow-headers"]).toMatch(/connect-protocol-version/i);
    expect(answer.headers["access-control-allow-headers"]).toMatch(/authorization/i);
    expect(answer.headers["access-control-max-age"]).toBe("120");
    expect(answer.headers.vary).toBe("Origin");
  });

  it("lets an allowed origin's page read the answer and its error headers", async () => {
    const answer = await search({ origin: CONSOLE_SITE });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).tools[0].name).toBe("weather.get");
    expect(answer.headers["access-control-allow-origin"]).toBe(CONSOLE_SITE);
    const exposed = (answer.headers["access-control-expose-headers"] ?? "").toLowerCase();
    for (const header of ["grpc-status", "grpc-message", "grpc-status-details-bin", "wayfind-stale"])
      expect(exposed).toContain(header);
  });

  it("refuses another origin's preflight, naming the setting that would allow it", async () => {
    const answer = await preflight("https://elsewhere.example");
    expect(answer.status).toBe(403);
    expect(answer.headers["access-control-allow-origin"]).toBeUndefined();
    expect(answer.body).toMatch(/add the origin to server\.cors\.allowed_origins/);
  });

  it("refuses another origin's request before it runs, even one a page may send without a preflight", async () => {
    const message = encodeURIComponent(JSON.stringify({ query: "weather" }));
    const answer = await send("GET", `${SEARCH_PATH}?encoding=json&message=${message}`, {
      origin: "https://elsewhere.example",
    });
    expect(answer.status).toBe(403);
  });

  it("serves pages of the server's own origin (the console) without any setting", async () => {
    const answer = await search({ origin: `http://127.0.0.1:${wayfind.port}` });
    expect(answer.status).toBe(200);
  });

  it("refuses a page that reached a loopback server by another name (DNS rebinding)", async () => {
    const answer = await search({ origin: "http://rebound.example:1234", host: "rebound.example:1234" });
    expect(answer.status).toBe(403);
    expect(answer.body).toMatch(/DNS rebinding/);
  });

  it("refuses the opaque origin of sandboxed frames and local files", async () => {
    expect((await search({ origin: "null" })).status).toBe(403);
  });

  it("applies the same rules to /mcp, whose preflight names what a browser MCP client sends", async () => {
    const answer = await send("OPTIONS", "/mcp", {
      origin: CONSOLE_SITE,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type, mcp-session-id, authorization",
    });
    expect(answer.status).toBe(204);
    expect(answer.headers["access-control-allow-methods"]).toBe("POST, GET, DELETE");
    expect(answer.headers["access-control-allow-headers"]).toMatch(/mcp-session-id/);
    const refused = await send("POST", "/mcp", { origin: "https://elsewhere.example" }, "{}");
    expect(refused.status).toBe(403);
  });

  it("leaves callers without an Origin (native clients) untouched", async () => {
    const answer = await search({});
    expect(answer.status).toBe(200);
    expect(answer.headers["access-control-allow-origin"]).toBeUndefined();
  });
});
