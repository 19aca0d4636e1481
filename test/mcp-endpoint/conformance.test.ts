import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startReferenceMcpServer } from "../support/reference-mcp.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance), every server scenario
 * (`--suite all`: the pending ones too), against wayfind's /mcp fronting one MCP server that holds
 * the suite's reference tools, prompts and resources (test/support/reference-mcp.ts), its names kept
 * as written (`namespace: ""`) and its tools always loaded, so /mcp lists them. What passes is what
 * goes through wayfind: tool results, progress, log messages, sampling and elicitation, prompts,
 * resources, templates, completions, subscriptions, resumable streams. Scenarios that do not apply
 * would be listed, with why, in conformance-baseline.yml (none do); the suite fails on a new failure
 * and on a listed scenario that passes.
 */

const require = createRequire(import.meta.url);
const SUITE = join(
  dirname(require.resolve("@modelcontextprotocol/conformance/package.json")),
  "dist/index.js",
);
const BASELINE = join(import.meta.dirname, "conformance-baseline.yml");

let reference: Awaited<ReturnType<typeof startReferenceMcpServer>>;
let wayfind: TestServer;
beforeAll(async () => {
  reference = await startReferenceMcpServer();
  wayfind = await startTestServer({
    mcp_servers: [
      { name: "reference", namespace: "", transport: "http", url: reference.url, loading_mode: "always" },
    ],
  });
}, 60_000);
afterAll(async () => {
  await wayfind.stop();
  await reference.close();
});

it("passes every server scenario of the conformance suite, without a warning", async () => {
  // The suite writes each scenario's checks under results/.
  const cwd = mkdtempSync(join(tmpdir(), "wayfind-conformance-"));
  const run = spawn(
    process.execPath,
    [
      SUITE,
      "server",
      "--url",
      `${wayfind.baseUrl}/mcp`,
      "--suite",
      "all",
      "--expected-failures",
      BASELINE,
      "--output-dir",
      "results",
    ],
    { cwd, stdio: ["ignore", "pipe", "pipe"] },
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
  expect(summary).toContain("Total: 46 passed, 0 failed");
  // server-sse-polling warns without a priming event (an id, no data) and the retry field.
  const scenarios = readdirSync(join(cwd, "results"));
  expect(scenarios).toHaveLength(32);
  const warnings = scenarios.flatMap((scenario) =>
    (
      JSON.parse(readFileSync(join(cwd, "results", scenario, "checks.json"), "utf8")) as {
        id: string;
        status: string;
      }[]
    )
      .filter((check) => check.status === "WARNING")
      .map((check) => `${scenario}: ${check.id}`),
  );
  expect(warnings).toEqual([]);
}, 240_000);
