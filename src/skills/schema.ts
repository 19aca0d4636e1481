import { type Db, hasFts5, type Migration } from "../database/sqlite.ts";

/**
 * Skills tables. `seq` is the stable rowid the in-memory search index points at (a TEXT primary key would
 * leave the implicit rowid free to change on VACUUM). Names are unique per scope: a project skill may shadow a
 * tenant or global skill of the same name, and reads resolve to the most specific one.
 */
export const skillsMigrations: Migration[] = [
  {
    id: "skills/001-init",
    up: (db: Db) => {
      db.exec(`
        CREATE TABLE skills (
          seq            INTEGER PRIMARY KEY,
          id             TEXT NOT NULL UNIQUE,
          name           TEXT NOT NULL,
          -- Last dot-separated segment of the name, so exact search finds a bare name without its prefix.
          name_tail      TEXT NOT NULL,
          scope_kind     TEXT NOT NULL CHECK (scope_kind IN ('project','tenant','global')),
          scope_rank     INTEGER NOT NULL,
          tenant_id      TEXT NOT NULL DEFAULT '',
          project_id     TEXT NOT NULL DEFAULT '',
          title          TEXT NOT NULL,
          description    TEXT NOT NULL,
          trigger_text   TEXT NOT NULL,
          task_type      TEXT NOT NULL CHECK (task_type IN ('browser','api','code','domain','unknown')),
          tags           TEXT NOT NULL,
          steps          TEXT NOT NULL,
          preconditions  TEXT NOT NULL,
          failure_modes  TEXT NOT NULL,
          extra          TEXT NOT NULL,
          origin         TEXT NOT NULL CHECK (origin IN ('pack','learned')),
          origin_ref     TEXT NOT NULL DEFAULT '',
          pack_name      TEXT NOT NULL DEFAULT '',
          content_hash   TEXT NOT NULL,
          created_at_ms  INTEGER NOT NULL,
          updated_at_ms  INTEGER NOT NULL,
          last_used_at_ms INTEGER,
          use_count      INTEGER NOT NULL DEFAULT 0,
          UNIQUE (scope_kind, tenant_id, project_id, name)
        );
        CREATE INDEX skills_scope ON skills (scope_kind, tenant_id, project_id);
        CREATE INDEX skills_task_type ON skills (task_type);
        CREATE INDEX skills_origin ON skills (origin);
        CREATE INDEX skills_name ON skills (name);
        CREATE INDEX skills_name_nocase ON skills (name COLLATE NOCASE);
        CREATE INDEX skills_name_tail ON skills (name_tail COLLATE NOCASE);
        CREATE INDEX skills_last_used ON skills (last_used_at_ms);
        CREATE INDEX skills_pack ON skills (pack_name, scope_kind, tenant_id, project_id);
        CREATE TABLE skill_packs (
          name         TEXT NOT NULL,
          scope_kind   TEXT NOT NULL,
          tenant_id    TEXT NOT NULL DEFAULT '',
          project_id   TEXT NOT NULL DEFAULT '',
          version      TEXT NOT NULL DEFAULT '',
          fingerprint  TEXT NOT NULL,
          skill_count  INTEGER NOT NULL,
          loaded_at_ms INTEGER NOT NULL,
          PRIMARY KEY (name, scope_kind, tenant_id, project_id)
        );
      `);
      // Applied databases keep what this created; skills/002 drops the table again.
      if (hasFts5(db)) {
        db.exec(
          "CREATE VIRTUAL TABLE skills_fts USING fts5(name, title, trigger_text, description, tags, tokenize = 'unicode61 remove_diacritics 2')",
        );
      }
    },
  },
  {
    // The in-memory word index (word-index.ts) answers every search; an FTS5 table nobody reads only costs writes.
    id: "skills/002-drop-fts",
    up: "DROP TABLE IF EXISTS skills_fts",
  },
];
