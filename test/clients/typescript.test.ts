import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKey } from "../support/auth.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const execFileAsync = promisify(execFile);

/** The package as a user gets it: built with its own tsconfig, loaded through its `exports`. */
const PACKAGE_DIR = join(import.meta.dirname, "..", "..", "clients", "typescript");
type ClientPackage = typeof import("../../clients/typescript/src/index.ts");

let wayfind: TestServer;
let client: ClientPackage;

beforeAll(async () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const build = spawnSync(process.execPath, [tsc, "-p", join(PACKAGE_DIR, "tsconfig.json")], {
    encoding: "utf8",
  });
  expect(build.status, build.stdout + build.stderr).toBe(0);
  const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8")) as {
    private?: boolean;
    exports: { ".": { default: string; types: string } };
  };
  expect(manifest.private).toBeUndefined();
  client = (await import(
    pathToFileURL(join(PACKAGE_DIR, manifest.exports["."].default)).href
  )) as ClientPackage;
  // The demo's GitHub catalog and skill pack, as `npm start` serves them.
  const demo = join(import.meta.dirname, "..", "..", "demo");
  wayfind = await startTestServer({
    catalogs: [{ path: join(demo, "catalogs", "github.jsonl"), namespace: "github" }],
    skill_packs: [{ name: "demo", path: join(demo, "skills"), scope_mode: "global" }],
  });
}, 120_000);
afterAll(() => wayfind?.stop());

describe("the TypeScript client package (@wayfind/client)", () => {
  it.each(["grpc", "connect"] as const)("searches, gets and activates tools over %s", async (protocol) => {
    const { tools } = client.connectWayfind(wayfind.baseUrl, { protocol });
    const caller = { tenantId: "acme", runId: `ts-${protocol}` };
    const found = await tools.searchTools({ caller, query: "create a pull request" });
    expect(found.tools[0]?.name).toBe("github.create_pull_request");
    expect(found.matchQuality).toBe(client.MatchQuality.GOOD);
    const got = await tools.getTools({ caller, names: ["github.create_pull_request"], includeSchemas: true });
    expect(got.tools[0]?.argsSchema).toBeDefined();
    const activated = await tools.activateTools({ caller, names: ["github.create_pull_request"] });
    expect(activated.activated).toEqual(["github.create_pull_request"]);
  });

  it("reaches the skill and usage services through the same connection", async () => {
    const { skills, usage } = client.connectWayfind(wayfind.baseUrl);
    const listed = await skills.listSkills({ caller: { tenantId: "acme" } });
    expect(listed.skills.length).toBeGreaterThan(0);
    const recorded = await usage.recordUsage({
      caller: { tenantId: "acme" },
      provider: client.Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 100n, outputTokens: 10n },
      idempotencyKey: "ts-client-1",
    });
    expect(recorded.duplicate).toBe(false);
  });

  it("runs the example an agent runtime would start from", async () => {
    const example = join(import.meta.dirname, "..", "..", "examples", "typescript", "example.ts");
    // Asynchronously: the server answers from this process's event loop.
    const { stdout } = await execFileAsync(
      process.execPath,
      ["--import", "tsx", example, "--addr", wayfind.baseUrl],
      {
        timeout: 60_000,
      },
    );
    expect(stdout).toContain("found: github.create_pull_request");
    expect(stdout).toMatch(/activated: github\.create_pull_request/);
    expect(stdout).toMatch(/recorded: cost \$\d/);
    // What README.md shows is what the example prints (a search's score follows the ranking: not compared).
    const readme = readFileSync(join(dirname(example), "README.md"), "utf8").split("## Run")[1] ?? "";
    const sample = (readme.split("```\n")[2] ?? "").split("```")[0] ?? "";
    const masked = (text: string) => text.trim().replace(/\(score \d\.\d\d\)/g, "(score …)");
    expect(masked(stdout)).toBe(masked(sample));
  });

  it("connects over TLS with an API key, and a call without the key is UNAUTHENTICATED", async () => {
    const tls = join(import.meta.dirname, "..", "fixtures", "tls");
    const key = apiKey("ts-client", { tenant: "acme", roles: ["agent"] });
    const secured = await startTestServer({
      server: { tls: { cert_file: join(tls, "server.pem"), key_file: join(tls, "server-key.pem") } },
      auth: { allow_unauthenticated: false, api_keys: [key.entry] },
    });
    try {
      const ca = readFileSync(join(tls, "ca.pem"), "utf8");
      const baseUrl = `https://localhost:${secured.port}`;
      for (const protocol of ["grpc", "connect"] as const) {
        const { tools } = client.connectWayfind(baseUrl, { protocol, apiKey: key.secret, ca });
        await expect(tools.listTools({})).resolves.toBeDefined();
        const { tools: keyless } = client.connectWayfind(baseUrl, { protocol, ca });
        await expect(keyless.listTools({})).rejects.toThrow(/requires credentials/);
      }
    } finally {
      await secured.stop();
    }
  });
});
