import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance), every server scenario,
 * against wayfind's /mcp. Scenarios that do not apply are listed, with why, in
 * conformance-baseline.yml; the suite fails on a new failure and on a listed scenario that passes.
 */

const require = createRequire(import.meta.url);
const SUITE = join(
  dirname(require.resolve("@modelcontextprotocol/conformance/package.json")),
  "dist/index.js",
);
const BASELINE = join(import.meta.dirname, "conformance-baseline.yml");

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

it("passes every server scenario of the conformance suite that applies", async () => {
  const run = spawn(
    process.execPath,
    [SUITE, "server", "--url", `${wayfind.baseUrl}/mcp`, "--expected-failures", BASELINE],
    // The suite writes its results/ folder where it runs.
    { cwd: mkdtempSync(join(tmpdir(), "wayfind-conformance-")), stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  run.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  run.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => run.once("exit", resolve));
  const summary = output.slice(output.indexOf("=== SUMMARY ==="));
  expect(summary, output.slice(-4_000)).toContain("server-initialize: 1 passed, 0 failed");
  expect(code, summary).toBe(0);
}, 240_000);
