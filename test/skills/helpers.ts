import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { Caller } from "../../src/caller/caller.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import type { EventSink, NewEvent } from "../../src/events/event.ts";
import { SkillLibrary, type SkillLibraryOptions, skillsMigrations } from "../../src/skills/index.ts";

const dirs: string[] = [];
const dbs: Db[] = [];

afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-skills-"));
  dirs.push(dir);
  return dir;
}

class RecordingSink implements EventSink {
  readonly events: NewEvent[] = [];
  emit(event: NewEvent): void {
    this.events.push(event);
  }
  ofType(type: NewEvent["type"]): NewEvent[] {
    return this.events.filter((e) => e.type === type);
  }
}

export interface Fixture {
  readonly db: Db;
  readonly dir: string;
  readonly service: SkillLibrary;
  readonly sink: RecordingSink;
}

export function fixture(options: Partial<SkillLibraryOptions> = {}): Fixture {
  const dir = tempDir();
  const db = openDatabase(join(dir, "wayfind.db"), skillsMigrations);
  dbs.push(db);
  const sink = new RecordingSink();
  const service = new SkillLibrary({ db, events: sink, packRoots: [dir], ...options });
  return { db, dir, service, sink };
}

export function caller(tenantId: string, projectId = "p1", extra: Partial<Caller> = {}): Caller {
  return {
    tenantId,
    projectId,
    userId: "u1",
    sessionId: "s1",
    runId: "r1",
    entitlements: [],
    narrowToTools: [],
    ...extra,
  };
}

export const GLOBAL = { kind: "global", tenantId: "", projectId: "" } as const;

export function jsonSkill(fields: Record<string, unknown>): string {
  return JSON.stringify({ trigger: "when testing", steps: ["do the thing"], ...fields });
}

/** Runs `fn` expecting a WayfindError; returns it. */
/** The domain error a promise rejects with; fails the test if it resolves. */
export async function rejected(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string; details: readonly string[] }> {
  try {
    await promise;
  } catch (error) {
    return thrown(() => {
      throw error;
    });
  }
  throw new Error("expected an error");
}

export function thrown(fn: () => unknown): { code: string; message: string; details: readonly string[] } {
  try {
    fn();
  } catch (error) {
    if (error && typeof error === "object" && "code" in error && "details" in error)
      return error as { code: string; message: string; details: readonly string[] };
    throw error;
  }
  throw new Error("expected an error");
}
