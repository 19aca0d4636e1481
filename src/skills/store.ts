import type Database from "better-sqlite3";
import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import type { ScopeKind, Skill, SkillOrigin, SkillScope, TaskType } from "./model.ts";
import type { PackSkill } from "./pack.ts";

type Statement = Database.Statement<unknown[], unknown>;

function nameTail(name: string): string {
  return name.slice(name.lastIndexOf(".") + 1);
}

/** A parameterised SQL fragment. */
export interface SqlPart {
  readonly sql: string;
  readonly params: readonly (string | number)[];
}

const SCOPE_RANK: Record<ScopeKind, number> = { global: 0, tenant: 1, project: 2 };

function ownsPredicate(alias: string, caller: Caller): SqlPart {
  return {
    sql: `(${alias}.scope_kind = 'global' OR (? <> '' AND ${alias}.tenant_id = ? AND (${alias}.scope_kind = 'tenant' OR (${alias}.scope_kind = 'project' AND ? <> '' AND ${alias}.project_id = ?))))`,
    params: [caller.tenantId, caller.tenantId, caller.projectId, caller.projectId],
  };
}

/**
 * THE visibility rule for skills — every read goes through it (docs/design.md §4): a caller sees global
 * skills, its tenant's skills and its project's skills; of several visible skills with one name only the
 * most specific (project > tenant > global) counts, so a project can shadow a global skill. Anything
 * else behaves exactly as if it did not exist.
 */
function visibleSkillPredicate(alias: string, caller: Caller): SqlPart {
  const own = ownsPredicate(alias, caller);
  const other = ownsPredicate("o", caller);
  return {
    sql: `(${own.sql} AND NOT EXISTS (SELECT 1 FROM skills o WHERE o.name = ${alias}.name AND o.scope_rank > ${alias}.scope_rank AND ${other.sql}))`,
    params: [...own.params, ...other.params],
  };
}

/** Visible to `caller` and, when given, of `taskType` (alias `s`). */
export function visibleFilter(caller: Caller, taskType: TaskType | undefined): SqlPart {
  const visible = visibleSkillPredicate("s", caller);
  if (!taskType) return visible;
  return { sql: `${visible.sql} AND s.task_type = ?`, params: [...visible.params, taskType] };
}

/** The columns a search result or listing line needs (alias `s`). */
export interface SearchRow {
  seq: number;
  id: string;
  name: string;
  title: string;
  trigger_text: string;
  description: string;
  task_type: TaskType;
  tags: string;
  scope_kind: ScopeKind;
}

export const SEARCH_COLUMNS =
  "s.seq, s.id, s.name, s.title, s.trigger_text, s.description, s.task_type, s.tags, s.scope_kind";

export interface SkillRow {
  seq: number;
  id: string;
  name: string;
  scope_kind: ScopeKind;
  tenant_id: string;
  project_id: string;
  title: string;
  description: string;
  trigger_text: string;
  task_type: TaskType;
  tags: string;
  steps: string;
  preconditions: string;
  failure_modes: string;
  extra: string;
  origin: SkillOrigin;
  origin_ref: string;
  content_hash: string;
  created_at_ms: number;
  updated_at_ms: number;
  last_used_at_ms: number | null;
  use_count: number;
}

export function rowToSkill(row: SkillRow): Skill {
  return {
    id: row.id,
    name: row.name,
    title: row.title,
    description: row.description,
    trigger: row.trigger_text,
    taskType: row.task_type,
    tags: JSON.parse(row.tags) as string[],
    steps: JSON.parse(row.steps) as string[],
    preconditions: JSON.parse(row.preconditions) as string[],
    failureModes: JSON.parse(row.failure_modes) as string[],
    extra: JSON.parse(row.extra) as Record<string, unknown>,
    origin: row.origin,
    originRef: row.origin_ref,
    contentHash: row.content_hash,
    scope: { kind: row.scope_kind, tenantId: row.tenant_id, projectId: row.project_id },
    stats: {
      createdAtMs: row.created_at_ms,
      updatedAtMs: row.updated_at_ms,
      lastUsedAtMs: row.last_used_at_ms,
      useCount: row.use_count,
    },
  };
}

export interface PackRecord {
  version: string;
  fingerprint: string;
  skill_count: number;
}

/** The columns a pack load writes on insert and on update, in the order of packContent's values. */
const PACK_CONTENT_COLUMNS = [
  "title",
  "description",
  "trigger_text",
  "task_type",
  "tags",
  "steps",
  "preconditions",
  "failure_modes",
  "extra",
  "origin_ref",
  "pack_name",
  "content_hash",
];

function packContent(skill: PackSkill, pack: string, originRef: string): string[] {
  const c = skill.content;
  return [
    c.title,
    c.description,
    c.trigger,
    c.taskType,
    JSON.stringify(c.tags),
    JSON.stringify(c.steps),
    JSON.stringify(c.preconditions),
    JSON.stringify(c.failureModes),
    JSON.stringify(c.extra),
    originRef,
    pack,
    skill.contentHash,
  ];
}

const INSERT_PACK_SKILL = `INSERT INTO skills (id, name, name_tail, scope_kind, scope_rank, tenant_id, project_id,
    ${PACK_CONTENT_COLUMNS.join(", ")}, origin, created_at_ms, updated_at_ms)
  VALUES (?, ?, ?, ?, ?, ?, ?, ${PACK_CONTENT_COLUMNS.map(() => "?").join(", ")}, 'pack', ?, ?)`;

const UPDATE_PACK_SKILL = `UPDATE skills SET ${PACK_CONTENT_COLUMNS.map((column) => `${column} = ?`).join(", ")},
    updated_at_ms = ?
  WHERE seq = ? AND origin = 'pack'`;

/** Storage of skills: SQL lives here, policy (limits, redaction, events) in the service. */
export class SkillStore {
  private readonly statements = new Map<string, Statement>();

  constructor(readonly db: Db) {}

  /** Prepared statements are cached by SQL text (the filters make a handful of shapes). */
  prepare(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare<unknown[]>(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  all<T>(sql: string, params: readonly (string | number)[]): T[] {
    return this.prepare(sql).all(...params) as T[];
  }

  get<T>(sql: string, params: readonly (string | number)[]): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }

  /** The skills of these names that `caller` sees (the most specific of each name), by name. */
  visibleByName(caller: Caller, names: readonly string[]): Map<string, SkillRow> {
    const where = visibleFilter(caller, undefined);
    const rows = this.all<SkillRow>(
      `SELECT s.* FROM skills s INDEXED BY skills_name WHERE s.name IN (${names.map(() => "?").join(",")}) AND ${where.sql}`,
      [...names, ...where.params],
    );
    return new Map(rows.map((row) => [row.name, row]));
  }

  packRecord(pack: string, scope: SkillScope): PackRecord | undefined {
    return this.get<PackRecord>(
      "SELECT version, fingerprint, skill_count FROM skill_packs WHERE name = ? AND scope_kind = ? AND tenant_id = ? AND project_id = ?",
      [pack, scope.kind, scope.tenantId, scope.projectId],
    );
  }

  /** Existing skills of one scope with the given names (any origin). */
  existingInScope(
    scope: SkillScope,
  ): Map<string, { id: string; seq: number; origin: SkillOrigin; content_hash: string; pack_name: string }> {
    const rows = this.all<{
      id: string;
      seq: number;
      name: string;
      origin: SkillOrigin;
      content_hash: string;
      pack_name: string;
    }>(
      "SELECT id, seq, name, origin, content_hash, pack_name FROM skills WHERE scope_kind = ? AND tenant_id = ? AND project_id = ?",
      [scope.kind, scope.tenantId, scope.projectId],
    );
    return new Map(rows.map((row) => [row.name, row]));
  }

  insert(skill: PackSkill, scope: SkillScope, pack: string, originRef: string, now: number): void {
    this.prepare(INSERT_PACK_SKILL).run(
      skill.id,
      skill.content.name,
      nameTail(skill.content.name),
      scope.kind,
      SCOPE_RANK[scope.kind],
      scope.tenantId,
      scope.projectId,
      ...packContent(skill, pack, originRef),
      now,
      now,
    );
  }

  update(seq: number, skill: PackSkill, pack: string, originRef: string, now: number): void {
    this.prepare(UPDATE_PACK_SKILL).run(...packContent(skill, pack, originRef), now, seq);
  }

  remove(seq: number): void {
    this.prepare("DELETE FROM skills WHERE seq = ? AND origin = 'pack'").run(seq);
  }

  recordPack(
    pack: string,
    scope: SkillScope,
    version: string,
    fingerprint: string,
    count: number,
    now: number,
  ): void {
    this.prepare(
      `INSERT INTO skill_packs (name, scope_kind, tenant_id, project_id, version, fingerprint, skill_count, loaded_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name, scope_kind, tenant_id, project_id)
       DO UPDATE SET version = excluded.version, fingerprint = excluded.fingerprint,
         skill_count = excluded.skill_count, loaded_at_ms = excluded.loaded_at_ms`,
    ).run(pack, scope.kind, scope.tenantId, scope.projectId, version, fingerprint, count, now);
  }

  /** Counts a use of each skill (by id); the caller's write transaction makes it atomic. */
  markUsed(ids: readonly string[], now: number): void {
    const statement = this.prepare(
      "UPDATE skills SET last_used_at_ms = ?, use_count = use_count + 1 WHERE id = ?",
    );
    for (const id of ids) statement.run(now, id);
  }
}
