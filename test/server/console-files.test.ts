import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.ts";

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

describe("the web console's files at /console", () => {
  it("serves the console's page with a policy that lets it load only its own files and call only this server", async () => {
    const response = await fetch(`${wayfind.baseUrl}/console`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("content-security-policy")).toMatch(/script-src 'self'.*connect-src 'self'/);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await response.text()).toContain('<script type="module" src="/console/app.js">');
  });

  it("sends the script compressed, and answers 304 while it has not changed", async () => {
    const first = await fetch(`${wayfind.baseUrl}/console/app.js`);
    expect(first.headers.get("content-encoding")).toBe("gzip");
    const etag = first.headers.get("etag") ?? "";
    const again = await fetch(`${wayfind.baseUrl}/console/app.js`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  it("answers 404 for a file the console does not have, and never reads a path from the request", async () => {
    expect((await fetch(`${wayfind.baseUrl}/console/nothing.js`)).status).toBe(404);
    expect((await fetch(`${wayfind.baseUrl}/console/..%2F..%2Fpackage.json`)).status).toBe(404);
  });

  it("answers 405 to anything but GET and HEAD", async () => {
    const response = await fetch(`${wayfind.baseUrl}/console`, { method: "POST" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
  });

  it("keeps the first load small: the script is at most 250 KB gzipped", () => {
    const script = readFileSync(join(process.cwd(), "dist", "console", "app.js"));
    expect(gzipSync(script).length).toBeLessThanOrEqual(250 * 1024);
  });
});

describe("server.console: false", () => {
  it("serves no console", async () => {
    const off = await startTestServer({ server: { console: false } });
    try {
      expect((await fetch(`${off.baseUrl}/console`)).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});
