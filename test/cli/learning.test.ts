import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { CLI } from "../support/cli.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

const run = promisify(execFile);
const REQUEST = "book PTO days";
const TOOLS = [
  { name: "hr.request_leave", description: "Files a leave request for an employee for the given days." },
  { name: "travel.book_flight", description: "Books a flight for a trip on the given days." },
];

let wayfind: RouterTestServer;
const tools = () => wayfind.grpc(ToolDiscoveryService);
const caller = (runId: string) => ({ tenantId: "acme", runId, sessionId: "s" });

/** `wayfind learning …` on the running server's data folder, as an operator runs it. */
async function learning(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, "learning", ...args, "--data-dir", wayfind.dataDir]);
  return stdout;
}

async function learnedScore(): Promise<number> {
  const found = await tools().searchTools({ caller: caller("look"), query: REQUEST });
  return found.tools.find((t) => t.name === "hr.request_leave")?.learnedScore ?? 0;
}

beforeAll(async () => {
  const catalog = join(mkdtempSync(join(tmpdir(), "wayfind-learning-cli-")), "tools.jsonl");
  writeFileSync(catalog, TOOLS.map((t) => JSON.stringify(t)).join("\n"));
  wayfind = await startRouterServer({ catalogs: [{ path: catalog }] });
  await tools().searchTools({ caller: caller("r-1"), query: REQUEST });
  await tools().getTools({ caller: caller("r-1"), names: ["hr.request_leave"] });
});
afterAll(() => wayfind.stop());

describe("wayfind learning", () => {
  it("shows what a tenant learned, and nothing for another", async () => {
    expect(await learning("show", "--tenant", "acme")).toContain(`hr.request_leave  ← "${REQUEST}"`);
    expect(await learning("show", "--tenant", "initech")).toContain("has learned nothing");
  });

  it("names the tool meant when --tool is misspelled, and resets nothing for it", async () => {
    expect(await learning("show", "--tenant", "acme", "--tool", "hr.request_leav")).toContain(
      "has learned nothing of hr.request_leav; did you mean hr.request_leave?",
    );
    const reset = await learning("reset", "--tenant", "acme", "--tool", "hr.reqest_leave").catch(
      (error: { stdout: string; code: number }) => `${error.code}: ${error.stdout}`,
    );
    expect(reset).toMatch(/^1: .*did you mean hr\.request_leave\?; nothing was reset/);
    expect(await learnedScore()).toBeGreaterThan(0);
  });

  it("resets it, and the running server forgets it on its next search; import brings back an export", async () => {
    const exported = await learning("export", "--tenant", "acme");
    expect(JSON.parse(exported.trim().split("\n")[0] ?? "{}")).toMatchObject({
      tool: "hr.request_leave",
      request: REQUEST,
    });
    expect(await learnedScore()).toBeGreaterThan(0);

    await learning("reset", "--tenant", "acme");
    expect(await learnedScore()).toBe(0);

    const file = join(wayfind.dataDir, "learned.jsonl");
    writeFileSync(file, exported);
    const lines = exported.trim().split("\n").length;
    expect(await learning("import", "--tenant", "acme", file)).toContain(
      `imported ${lines} learned requests`,
    );
    expect(await learnedScore()).toBeGreaterThan(0);
  });

  it("says which line of an import is wrong and what it needs", async () => {
    const file = join(wayfind.dataDir, "bad.jsonl");
    writeFileSync(file, '{"tool": "hr.request_leave", "request": "x", "weight": 1}\n{"tool": "x"}\n');
    const failed = await learning("import", "--tenant", "acme", file).catch(
      (error: { stderr: string }) => error.stderr,
    );
    expect(failed).toContain("bad.jsonl:2");
    expect(failed).toContain('"weight" (a number)');
  });
});
