import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
});
