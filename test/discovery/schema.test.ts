import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { applyMigrations } from "../../src/database/sqlite.ts";
import { discoveryMigrations, ToolRegistry } from "../../src/discovery/index.ts";
import { catalogOn, names, openCatalog, TOOLS, tempDir } from "./helpers.ts";

const upTo = (id: string) => discoveryMigrations.filter((m) => m.id <= id);

/** The row an older release wrote for `name` (before owners, before 004 dropped the search columns). */
function legacyDefinition(name: string, description: string) {
  return {
    name,
    namespace: name.split(".")[0] ?? "",
    title: "",
    description,
    tags: [],
    sideEffects: "read",
    loadingMode: "deferred",
    argsSchema: { type: "object" },
    outputSchema: null,
    examples: [],
    aliases: [],
    hash: `h-${name}`,
  };
}

describe("discovery/003-owner", () => {
  it("keeps the tools of an older database as global tools, searchable, with the FTS5 index in step", async () => {
    const db = new Database(join(tempDir(), "old.db"));
    applyMigrations(
      db,
      discoveryMigrations.filter((m) => m.id < "discovery/003"),
    );
    db.prepare(
      `INSERT INTO discovery_tools (name, source, hash, definition, search_name, description, search_tags, search_params)
       VALUES ('ops.ping', 'legacy', 'h-ops.ping', ?, 'ops ping', 'Ping a host.', '', '')`,
    ).run(JSON.stringify(legacyDefinition("ops.ping", "Ping a host.")));

    expect(applyMigrations(db, upTo("discovery/003-owner"))).toEqual(["discovery/003-owner"]);
    // A tenant's tool of the same name, as the release at 003 wrote it: the triggers still index it.
    db.prepare(
      `INSERT INTO discovery_tools (owner, name, source, hash, definition, search_name, description, search_tags, search_params)
       VALUES ('acme', 'ops.ping', 'legacy', 'h2', ?, 'ops ping', 'Ping.', '', '')`,
    ).run(JSON.stringify(legacyDefinition("ops.ping", "Ping.")));
    expect(() =>
      db.exec("INSERT INTO discovery_tools_fts(discovery_tools_fts, rank) VALUES ('integrity-check', 1)"),
    ).not.toThrow();
    const hits = db
      .prepare("SELECT rowid FROM discovery_tools_fts WHERE discovery_tools_fts MATCH 'ping'")
      .all();
    expect(hits).toHaveLength(2);

    applyMigrations(db, discoveryMigrations);
    const registry = new ToolRegistry(db);
    expect([...registry.all()].map((t) => [t.owner, t.name, t.source])).toEqual([
      ["", "ops.ping", "legacy"],
      ["acme", "ops.ping", "legacy"],
    ]);
    db.close();
  });
});

describe("discovery/004-drop-fts", () => {
  it("drops the unread FTS5 index and its columns, keeping every tool, which search finds as before", async () => {
    // Registered the way the release at 003 did: every column, the FTS5 triggers writing along.
    const file = join(tempDir(), "at-003.db");
    const old = new Database(file);
    applyMigrations(old, upTo("discovery/003-owner"));
    const fresh = openCatalog();
    await fresh.catalog.registry.register("test", TOOLS);
    await fresh.catalog.registry.register(
      "acme-src",
      [{ name: "ops.deploy", description: "Deploy a build" }],
      {
        owner: "acme",
      },
    );
    const insert = old.prepare(
      `INSERT INTO discovery_tools (owner, name, source, hash, definition, search_name, description, search_tags, search_params)
       VALUES (?, ?, ?, ?, ?, ?, ?, '', '')`,
    );
    for (const tool of fresh.catalog.registry.all()) {
      const { source, owner, ...record } = tool;
      insert.run(owner, tool.name, source, tool.hash, JSON.stringify(record), tool.name, tool.description);
    }

    expect(applyMigrations(old, discoveryMigrations)).toEqual(["discovery/004-drop-fts"]);
    const tables = old
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'discovery_tools%'")
      .all()
      .map((row) => row.name);
    expect(tables).not.toContain("discovery_tools_fts");
    const columns = old
      .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('discovery_tools')")
      .all()
      .map((row) => row.name);
    expect(columns).toEqual(["id", "owner", "name", "source", "hash", "definition"]);

    const migrated = catalogOn(old);
    expect(sorted(migrated.registry.all())).toEqual(sorted(fresh.catalog.registry.all()));
    const searches = [
      { query: "weather forecast for a city" },
      { query: "screenshoot" },
      { query: "^kubernetes\\.", type: "regex" as const },
      { query: "slack.send_message", type: "exact" as const },
    ];
    for (const search of searches)
      expect(names(migrated.index.search(search))).toEqual(names(fresh.catalog.index.search(search)));
    // And it keeps taking writes.
    await migrated.registry.register("test", [{ name: "ops.ping", description: "Ping a host" }]);
    expect(names(migrated.index.search({ query: "ping a host" }))).toContain("ops.ping");
    old.close();
  });
});

function sorted(tools: Iterable<{ owner: string; name: string }>) {
  return [...tools].sort((a, b) => `${a.owner}/${a.name}`.localeCompare(`${b.owner}/${b.name}`));
}
