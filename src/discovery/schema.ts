import { type Db, hasFts5, type Migration } from "../database/sqlite.ts";

/**
 * `discovery_tools` holds the tool definitions, one row per (owner, name). Search runs on an
 * in-memory index built from them (search-index.ts); migrations 001-003 also kept an FTS5 index of
 * analysed search text that nothing read, which 004 drops.
 */
/** The FTS5 index of migrations 002-003 (dropped by 004). */
const FTS_TABLE = "discovery_tools_fts";

const DROP_FTS_TRIGGERS = `
  DROP TRIGGER IF EXISTS discovery_tools_ai;
  DROP TRIGGER IF EXISTS discovery_tools_ad;
  DROP TRIGGER IF EXISTS discovery_tools_au;
`;

export const discoveryMigrations: Migration[] = [
  {
    id: "discovery/001-tools",
    up: `
      CREATE TABLE discovery_tools (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL UNIQUE,
        source        TEXT NOT NULL,
        hash          TEXT NOT NULL,
        definition    TEXT NOT NULL,
        search_name   TEXT NOT NULL,
        description   TEXT NOT NULL,
        search_tags   TEXT NOT NULL,
        search_params TEXT NOT NULL
      );
      CREATE INDEX discovery_tools_source ON discovery_tools(source);
    `,
  },
  { id: "discovery/002-fts", up: (db: Db) => createFtsIndex(db) },
  {
    // Tools get an owner (a tenant, or "" = global) and names become unique per owner. SQLite cannot
    // drop the old UNIQUE(name), so the table is rebuilt with the same ids (the FTS5 rowids) and
    // every existing tool becomes global, as it was before.
    id: "discovery/003-owner",
    up: (db: Db) => {
      const fts = ftsTableExists(db);
      db.exec(`
        ${DROP_FTS_TRIGGERS}
        CREATE TABLE discovery_tools_owned (
          id            INTEGER PRIMARY KEY,
          owner         TEXT NOT NULL DEFAULT '',
          name          TEXT NOT NULL,
          source        TEXT NOT NULL,
          hash          TEXT NOT NULL,
          definition    TEXT NOT NULL,
          search_name   TEXT NOT NULL,
          description   TEXT NOT NULL,
          search_tags   TEXT NOT NULL,
          search_params TEXT NOT NULL,
          UNIQUE (owner, name)
        );
        INSERT INTO discovery_tools_owned
          (id, owner, name, source, hash, definition, search_name, description, search_tags, search_params)
          SELECT id, '', name, source, hash, definition, search_name, description, search_tags, search_params
          FROM discovery_tools;
        DROP TABLE discovery_tools;
        ALTER TABLE discovery_tools_owned RENAME TO discovery_tools;
        CREATE INDEX discovery_tools_source ON discovery_tools(owner, source);
      `);
      if (fts) db.exec(FTS_TRIGGERS);
    },
  },
  {
    // The in-memory ranker answers every search: the FTS5 table, its triggers and the columns of
    // search text it indexed were written on every registration and never read.
    id: "discovery/004-drop-fts",
    up: `
      ${DROP_FTS_TRIGGERS}
      DROP TABLE IF EXISTS ${FTS_TABLE};
      ALTER TABLE discovery_tools DROP COLUMN search_name;
      ALTER TABLE discovery_tools DROP COLUMN description;
      ALTER TABLE discovery_tools DROP COLUMN search_tags;
      ALTER TABLE discovery_tools DROP COLUMN search_params;
    `,
  },
];

/** Migration 002: the FTS5 table and its triggers, when this SQLite has FTS5. */
function createFtsIndex(db: Db): void {
  if (!hasFts5(db) || ftsTableExists(db)) return;
  db.exec(`
    CREATE VIRTUAL TABLE ${FTS_TABLE} USING fts5(
      search_name, description, search_tags, search_params,
      content='discovery_tools', content_rowid='id', tokenize='porter unicode61'
    );
    ${FTS_TRIGGERS}
    INSERT INTO ${FTS_TABLE}(${FTS_TABLE}) VALUES ('rebuild');
  `);
}

function ftsTableExists(db: Db): boolean {
  return (
    db
      .prepare<[string], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(FTS_TABLE) !== undefined
  );
}

/** Keep the FTS5 index in step with discovery_tools, whatever code path writes it. */
const FTS_TRIGGERS = `
    CREATE TRIGGER discovery_tools_ai AFTER INSERT ON discovery_tools BEGIN
      INSERT INTO ${FTS_TABLE}(rowid, search_name, description, search_tags, search_params)
      VALUES (new.id, new.search_name, new.description, new.search_tags, new.search_params);
    END;
    CREATE TRIGGER discovery_tools_ad AFTER DELETE ON discovery_tools BEGIN
      INSERT INTO ${FTS_TABLE}(${FTS_TABLE}, rowid, search_name, description, search_tags, search_params)
      VALUES ('delete', old.id, old.search_name, old.description, old.search_tags, old.search_params);
    END;
    CREATE TRIGGER discovery_tools_au AFTER UPDATE ON discovery_tools BEGIN
      INSERT INTO ${FTS_TABLE}(${FTS_TABLE}, rowid, search_name, description, search_tags, search_params)
      VALUES ('delete', old.id, old.search_name, old.description, old.search_tags, old.search_params);
      INSERT INTO ${FTS_TABLE}(rowid, search_name, description, search_tags, search_params)
      VALUES (new.id, new.search_name, new.description, new.search_tags, new.search_params);
    END;
`;
