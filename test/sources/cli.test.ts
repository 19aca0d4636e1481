import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey } from "../support/auth.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const CLI = join(import.meta.dirname, "..", "..", "bin", "wayfind.js");

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    mcp_servers: [{ name: "ghost", transport: "stdio", command: "wayfind-no-such-command-xyz" }],
  });
  await wayfind.grpc(ToolDiscoveryService).registerTools({
    caller: { tenantId: "acme" },
    source: "team-api",
    namespace: "team",
    tools: [{ name: "ping", description: "Ping." }],
  });
}, 20_000);
afterAll(() => wayfind?.stop());

describe("wayfind sources", () => {
  it("prints a table of every tenant's sources over gRPC (as the operator) and exits 1 when one is unhealthy", async () => {
    const { code, stdout } = await run(["sources", "--addr", `127.0.0.1:${wayfind.port}`]);
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^SOURCE\s+TENANT\s+KIND\s+TOOLS\s+HEALTHY\s+LAST SYNC\s+LAST ERROR$/);
    expect(lines.find((l) => l.startsWith("mcp:ghost"))).toMatch(
      /^mcp:ghost\s+-\s+mcp-stdio\s+0\s+NO\s+-\s+connect failed: command not found: wayfind-no-such-command-xyz/,
    );
    expect(lines.find((l) => l.startsWith("team-api"))).toMatch(
      /^team-api\s+acme\s+api\s+1\s+yes\s+\d{4}-\d\d-\d\dT/,
    );
    expect(code).toBe(1);
  }, 20_000);

  it("names the address and the fix when no server answers", async () => {
    const { code, stderr } = await run(["sources", "--addr", "127.0.0.1:1"]);
    expect(code).toBe(1);
    expect(stderr).toContain("cannot list sources from http://127.0.0.1:1");
    expect(stderr).toContain("wayfind serve");
  }, 20_000);
});

describe("wayfind sources against a server that needs credentials", () => {
  it("lists every tenant's sources with an operator key, and names the refusal without one", async () => {
    const operator = apiKey("ops", { roles: ["admin"] });
    const secured = await startTestServer({
      auth: { allow_unauthenticated: false, api_keys: [operator.entry] },
    });
    try {
      const withKey = await run([
        "sources",
        "--addr",
        `127.0.0.1:${secured.port}`,
        "--api-key",
        operator.secret,
      ]);
      expect(withKey.stdout).toMatch(/^SOURCE\s+TENANT/);
      expect(withKey.code).toBe(0);
      const without = await run(["sources", "--addr", `127.0.0.1:${secured.port}`]);
      expect(without.code).toBe(1);
      expect(without.stderr).toContain("this server requires credentials");
      expect(without.stderr).toContain("give an operator key with --api-key or WAYFIND_API_KEY");
      // The server answered: nothing suggests it is not running.
      expect(without.stderr).not.toContain("running there");
      const wrong = await run(["sources", "--addr", `127.0.0.1:${secured.port}`, "--api-key", "wf_unknown"]);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain("check the key (--api-key or WAYFIND_API_KEY)");
      expect(wrong.stderr).not.toContain("running there");
    } finally {
      await secured.stop();
    }
  }, 20_000);

  it("refuses a pasted placeholder before calling, saying what a key looks like", async () => {
    const { code, stderr } = await run(["sources", "--addr", "127.0.0.1:1", "--api-key", "wf_…"]);
    expect(code).toBe(2);
    expect(stderr).toContain('the API key in --api-key cannot be a key: character 4 of 4 is "…"');
    expect(stderr).toContain("wayfind keys create");
  });
});
