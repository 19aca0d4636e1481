import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { launchChromium } from "../support/browser.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// A page served from another origin calls wayfind with @connectrpc/connect-web in a real browser:
// the preflights, the exposed headers and the refusal of origins the config does not name.
const dir = mkdtempSync(join(tmpdir(), "wayfind-cors-page-"));
let site: http.Server;
let siteOrigin: string;
let wayfind: TestServer;
let browser: Browser;
let page: Page;

/** Serves the test page and its bundled script, nothing else. */
function servePage(): Promise<http.Server> {
  const html =
    '<!doctype html><html lang="en"><head><title>elsewhere</title><script type="module" src="/page.js"></script></head><body></body></html>';
  const server = http.createServer((request, response) => {
    const path = request.url?.split("?", 1)[0];
    if (path === "/page.js") {
      response.writeHead(200, { "content-type": "text/javascript" });
      response.end(readFileSync(join(dir, "page.js")));
    } else {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(html);
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

beforeAll(async () => {
  await build({
    entryPoints: [join(import.meta.dirname, "..", "support", "cross-origin-page.ts")],
    outfile: join(dir, "page.js"),
    bundle: true,
    format: "esm",
    logLevel: "warning",
  });
  site = await servePage();
  // "localhost" here and 127.0.0.1 for wayfind: two origins on one machine.
  siteOrigin = `http://localhost:${(site.address() as AddressInfo).port}`;
  writeFileSync(
    join(dir, "tools.jsonl"),
    `${JSON.stringify({ name: "weather.current", description: "Current weather for a city", loading_mode: "deferred" })}\n`,
  );
  wayfind = await startTestServer(
    { server: { cors: { allowed_origins: [siteOrigin] } }, catalogs: [{ path: "tools.jsonl" }] },
    { dataDir: dir },
  );
  await wayfind.grpc(ToolDiscoveryService).activateTools({
    caller: { tenantId: "acme", sessionId: "s-1", runId: "r-1" },
    names: ["weather.current"],
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await wayfind?.stop();
  await new Promise((resolve) => site?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  page = await browser.newPage();
  return () => page.close();
});

async function openPage(origin: string, protocol: "connect" | "grpc-web"): Promise<void> {
  await page.goto(`${origin}/?wayfind=${encodeURIComponent(wayfind.baseUrl)}&protocol=${protocol}`);
  await page.waitForFunction("globalThis.wayfind !== undefined");
}

describe.each(["connect", "grpc-web"] as const)("a page on an allowed origin, over %s", (protocol) => {
  it("makes unary calls", async () => {
    await openPage(siteOrigin, protocol);
    expect(await page.evaluate('wayfind.search("weather in Paris")')).toEqual(["weather.current"]);
  });

  it("follows a server stream", async () => {
    await openPage(siteOrigin, protocol);
    expect(await page.evaluate("wayfind.activations(1)")).toEqual(["weather.current"]);
  });

  it("reads the code and message of an error", async () => {
    await openPage(siteOrigin, protocol);
    const refused = (await page.evaluate("wayfind.refused()")) as { code: Code; message: string };
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.message).toMatch(/names/);
  });
});

describe("a page on an origin the config does not name", () => {
  it("cannot call wayfind", async () => {
    // The same page, reached by another name: another origin.
    const elsewhere = siteOrigin.replace("localhost", "127.0.0.1");
    await openPage(elsewhere, "connect");
    const outcome = await page.evaluate('wayfind.search("weather").then(() => "answered", (e) => String(e))');
    expect(outcome).not.toBe("answered");
  });
});
