import * as http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isReady } from "../../src/server/http-health.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

/** GET over cleartext HTTP/2 (prior knowledge), as an h2c probe sends it. */
async function h2Get(path: string): Promise<{ status: number; body: string }> {
  const session = http2.connect(wayfind.baseUrl);
  try {
    const stream = session.request({ ":method": "GET", ":path": path });
    const chunks: Buffer[] = [];
    const status = await new Promise<number>((resolve, reject) => {
      stream.on("response", (headers) => resolve(Number(headers[":status"])));
      stream.on("error", reject);
    });
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return { status, body: Buffer.concat(chunks).toString() };
  } finally {
    session.close();
  }
}

describe("HTTP health endpoints on the service port", () => {
  it("answers GET /healthz while the process is up", async () => {
    const response = await fetch(`${wayfind.baseUrl}/healthz`);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it("answers GET /readyz with every check once the index is built", async () => {
    const response = await fetch(`${wayfind.baseUrl}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "ready",
      checks: {
        index: "ok",
        database: "ok",
        draining: "no",
        writes: "ok",
        semantic: "off",
        semantic_pending: 0,
      },
    });
  });

  it("answers over h2c too, beside gRPC on the same port", async () => {
    const { status, body } = await h2Get("/readyz");
    expect(status).toBe(200);
    expect(JSON.parse(body)).toMatchObject({ status: "ready" });
  });

  it("answers another method with 405 and the methods it takes", async () => {
    const response = await fetch(`${wayfind.baseUrl}/healthz`, { method: "POST" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("readiness", () => {
  const ok = {
    index: "ok",
    database: "ok",
    draining: "no",
    writes: "ok",
    semantic: "ready",
    semanticPending: 0,
  } as const;
  it.each([
    [{ ...ok }, true],
    // A replica whose shared database is away still serves reads (/readyz/writes says it cannot write).
    [{ ...ok, writes: "unavailable" }, true],
    [{ ...ok, index: "building" }, false],
    [{ ...ok, database: "unreachable" }, false],
    [{ ...ok, draining: "yes" }, false],
    // Tools without a vector yet are ranked by their words: the server is useful meanwhile.
    [{ ...ok, semantic: "partial", semanticPending: 12 }, true],
  ] as const)("%j is ready: %s", (checks, ready) => {
    expect(isReady(checks)).toBe(ready);
  });
});
