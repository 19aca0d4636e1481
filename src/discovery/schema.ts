import { type Db, hasFts5, type Migration } from "../store/database.ts";

/**
 * `discovery_tools` holds the definitions (and the analysed search text); `discovery_tools_fts` is
 * the FTS5 index over that text, kept in sync by triggers so no code path can forget it.
 */
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
  { id: "discovery/002-fts", up: (db: Db) => ensureFtsIndex(db) },
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
];

export const FTS_TABLE = "discovery_tools_fts";

/**
 * Creates the FTS5 table and its triggers when this SQLite has FTS5 (and rebuilds it if it was
 * created late, e.g. the DB was first opened by a build without FTS5). Returns availability.
 */
export function ensureFtsIndex(db: Db): boolean {
  if (!hasFts5(db)) return false;
  if (ftsTableExists(db)) return true;
  db.exec(`
    CREATE VIRTUAL TABLE ${FTS_TABLE} USING fts5(
      search_name, description, search_tags, search_params,
      content='discovery_tools', content_rowid='id', tokenize='porter unicode61'
    );
    ${FTS_TRIGGERS}
    INSERT INTO ${FTS_TABLE}(${FTS_TABLE}) VALUES ('rebuild');
  `);
  return true;
}

function ftsTableExists(db: Db): boolean {
  return (
    db
      .prepare<[string], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(FTS_TABLE) !== undefined
  );
}

const DROP_FTS_TRIGGERS = `
  DROP TRIGGER IF EXISTS discovery_tools_ai;
  DROP TRIGGER IF EXISTS discovery_tools_ad;
  DROP TRIGGER IF EXISTS discovery_tools_au;
`;

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
