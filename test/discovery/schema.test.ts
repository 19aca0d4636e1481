import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { discoveryMigrations, ToolCatalog } from "../../src/discovery/index.ts";
import { applyMigrations } from "../../src/store/database.ts";
import { tempDir } from "./helpers.ts";

describe("discovery/003-owner", () => {
  it("keeps the tools of an older database as global tools, searchable, with the FTS5 index in step", async () => {
    const db = new Database(join(tempDir(), "old.db"));
    const beforeOwners = discoveryMigrations.filter((m) => m.id < "discovery/003");
    applyMigrations(db, beforeOwners);
    // The row an older release wrote for ops.ping (it stored no owner).
    const definition = {
      name: "ops.ping",
      namespace: "ops",
      title: "",
      description: "Ping a host.",
      tags: [],
      sideEffects: "read",
      loadingMode: "deferred",
      argsSchema: { type: "object" },
      outputSchema: null,
      examples: [],
      aliases: [],
      hash: "h1",
    };
    db.prepare(
      `INSERT INTO discovery_tools (name, source, hash, definition, search_name, description, search_tags, search_params)
       VALUES ('ops.ping', 'legacy', 'h1', ?, 'ops ping', 'Ping a host.', '', '')`,
    ).run(JSON.stringify(definition));

    expect(applyMigrations(db, discoveryMigrations)).toEqual(["discovery/003-owner"]);
    const catalog = new ToolCatalog(db);
    expect([...catalog.all()].map((t) => [t.owner, t.name, t.source])).toEqual([["", "ops.ping", "legacy"]]);
    await catalog.register("legacy", [{ name: "ping", namespace: "ops", description: "Ping." }], {
      owner: "acme",
    });
    expect(() =>
      db.exec("INSERT INTO discovery_tools_fts(discovery_tools_fts, rank) VALUES ('integrity-check', 1)"),
    ).not.toThrow();
    const hits = db
      .prepare("SELECT rowid FROM discovery_tools_fts WHERE discovery_tools_fts MATCH 'ping'")
      .all();
    expect(hits).toHaveLength(2);
    db.close();
  });
});
