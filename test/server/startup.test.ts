import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { startTestServer } from "../support/server.ts";

describe("starting the server", () => {
  it("refuses a catalog file with a bad line, naming file and line, and can start again once it is fixed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-start-"));
    const catalog = join(dir, "tools.jsonl");
    writeFileSync(catalog, '{"name": "ok", "description": "Fine."}\n{"name": \n');
    await expect(startTestServer({ catalogs: [{ path: "tools.jsonl" }] }, { dataDir: dir })).rejects.toThrow(
      /tools\.jsonl:2/,
    );
    // The failed start left the database closed and consistent: a fixed file starts cleanly.
    writeFileSync(catalog, '{"name": "ok", "description": "Fine."}\n');
    const server = await startTestServer({ catalogs: [{ path: "tools.jsonl" }] }, { dataDir: dir });
    await server.stop();
  });

  it("logs each catalog with its own fingerprint, which moves only when that file changes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-start-"));
    writeFileSync(join(dir, "a.jsonl"), '{"name": "alpha", "description": "First."}\n');
    writeFileSync(join(dir, "b.jsonl"), '{"name": "beta", "description": "Second."}\n');
    const config = { catalogs: [{ path: "a.jsonl" }, { path: "b.jsonl" }] };
    const fingerprints = async () => {
      const lines: { msg: string; catalog?: string; fingerprint?: string }[] = [];
      const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const server = await startTestServer(config, { dataDir: dir, logger });
      await server.stop({ keepData: true });
      const loaded = lines.filter((line) => line.msg === "catalog loaded");
      return new Map(loaded.map((line) => [line.catalog?.split("/").pop(), line.fingerprint]));
    };
    const first = await fingerprints();
    expect(first.get("a.jsonl")).toMatch(/^[0-9a-f]{64}$/);
    expect(first.get("a.jsonl")).not.toBe(first.get("b.jsonl"));
    writeFileSync(join(dir, "b.jsonl"), '{"name": "beta", "description": "Second, changed."}\n');
    const second = await fingerprints();
    expect(second.get("a.jsonl")).toBe(first.get("a.jsonl"));
    expect(second.get("b.jsonl")).not.toBe(first.get("b.jsonl"));
  });
});
