import { randomUUID } from "node:crypto";
import type { Caller } from "../caller/caller.ts";
import { invalidArgument, quoteInput } from "../errors.ts";
import { checkSize, LIMITS } from "../limits.ts";
import type { ReplicatedWrite } from "../replication/writes.ts";
import type { SkillContext } from "./context.ts";
import type { SkillScope } from "./model.ts";
import {
  formatProblem,
  PACK_NAME,
  type PackFile,
  type PackLimits,
  type PackProblem,
  type PackSkill,
} from "./pack.ts";
import { readInlineFiles, readPackFolder, resolvePackDir } from "./pack-files.ts";
import { packFingerprint, parsePack } from "./pack-parse.ts";
import { checkScope } from "./request.ts";

export interface LoadProgress {
  readonly phase: "read" | "parse" | "write";
  readonly done: number;
  readonly total: number;
}

export interface LoadSkillPackInput {
  /** Pack name: lowercase letters, digits, '-' and '_'. Default skill names are `pack.<pack>.<slug>`. */
  readonly pack: string;
  readonly version?: string;
  /** A server-side folder (inside the configured pack roots)… */
  readonly path?: string;
  /** …or inline files. Exactly one of the two. */
  readonly files?: readonly PackFile[];
  readonly scope: SkillScope;
  /** Update pack skills whose content changed and remove those the pack no longer has (default true). */
  readonly updateExistingPackSkills?: boolean;
  readonly onProgress?: (progress: LoadProgress) => void;
}

export interface LoadSkillPackResult {
  readonly pack: string;
  /** Skills in the pack. */
  readonly skillCount: number;
  /** Newly inserted. */
  readonly loaded: number;
  readonly updated: number;
  readonly unchanged: number;
  /** Pack skills of an earlier version that this version no longer has. */
  readonly removed: number;
  /** Changed skills left as they were because updateExistingPackSkills was false. */
  readonly notUpdated: number;
  /** Names held by learned skills, which packs never overwrite. */
  readonly skippedLearned: readonly string[];
}

/** Where packs may be read from and how large they may be. */
export interface PackSettings {
  /** Server-side pack folders must lie inside one of these (relative pack paths resolve against the first). */
  readonly packRoots: readonly string[];
  readonly limits: PackLimits;
}

/** Reports the write phase as done (a write is one transaction: it has no steps to report). */
export function reportWritten(input: LoadSkillPackInput, result: LoadSkillPackResult): void {
  input.onProgress?.({ phase: "write", done: result.skillCount, total: result.skillCount });
}

/** A checked pack, as every replica stores it (see skillPackWrite). */
export type SkillPackChange = {
  readonly pack: string;
  readonly scope: SkillScope;
  readonly version: string;
  readonly fingerprint: string;
  readonly update: boolean;
  readonly skills: readonly PackSkill[];
  /** Who loaded it, for its event; absent for the server's configured packs. */
  readonly caller?: Pick<Caller, "tenantId" | "sessionId" | "runId">;
};

/**
 * Reads and validates a pack: either it is byte-identical to the last complete load (`unchanged`,
 * nothing to write; its event is emitted here), or the change that stores it.
 */
export function prepareSkillPack(
  context: SkillContext,
  settings: PackSettings,
  input: LoadSkillPackInput,
  caller?: Caller,
): { readonly unchanged: LoadSkillPackResult } | { readonly change: SkillPackChange } {
  const { store } = context;
  checkSize(LIMITS.packName, input.pack.length);
  if (!PACK_NAME.test(input.pack))
    throw invalidArgument(
      `pack_name ${quoteInput(input.pack)} must use lowercase letters, digits, '-' and '_', starting with a letter or digit`,
    );
  const scope = checkScope(input.scope);
  if ((input.path === undefined) === (input.files === undefined))
    throw invalidArgument("pass exactly one of path (a server-side folder) or files (inline)");
  const progress = input.onProgress;
  const problems: PackProblem[] = [];
  let files: PackFile[];
  if (input.path !== undefined) {
    const resolved = resolvePackDir(input.path, settings.packRoots);
    if (!resolved.dir)
      throw invalidArgument(`skill pack ${quoteInput(input.pack)} rejected: ${resolved.error}`);
    files = readPackFolder(resolved.dir, settings.limits, problems);
  } else {
    checkSize(LIMITS.inlinePackFiles, input.files?.length ?? 0);
    files = readInlineFiles(input.files ?? [], settings.limits, problems);
  }
  progress?.({ phase: "read", done: files.length, total: files.length });
  const version = input.version ?? "";
  const previous = store.packRecord(input.pack, scope);
  if (
    problems.length === 0 &&
    previous?.version === version &&
    previous.fingerprint === packFingerprint(files)
  ) {
    // Byte-identical to the last complete load: nothing to parse, nothing to write.
    const total = previous.skill_count;
    const same: LoadSkillPackResult = {
      pack: input.pack,
      skillCount: total,
      loaded: 0,
      updated: 0,
      unchanged: total,
      removed: 0,
      notUpdated: 0,
      skippedLearned: [],
    };
    // Nothing was written, so nothing to commit it with: batched like any report of a read.
    emitPackLoaded(context, same, caller, scope);
    return { unchanged: same };
  }
  const parsed = parsePack(input.pack, files, settings.limits, problems, (done, total) =>
    progress?.({ phase: "parse", done, total }),
  );
  if (problems.length > 0) {
    throw invalidArgument(
      `skill pack ${quoteInput(input.pack)} rejected with ${problems.length} problem${problems.length === 1 ? "" : "s"}; nothing was loaded: ${formatProblem(problems[0] as PackProblem)}${problems.length > 1 ? " (see details for all)" : ""}`,
      problems.map(formatProblem),
    );
  }
  return {
    change: {
      pack: input.pack,
      scope,
      version,
      fingerprint: parsed.fingerprint,
      update: input.updateExistingPackSkills ?? true,
      // Ids are given here, once: every replica stores a new skill under the same id.
      skills: parsed.skills.map((skill) => ({
        id: `sk_${randomUUID().replace(/-/g, "").slice(0, 24)}`,
        content: skill.content,
        contentHash: skill.contentHash,
      })),
      ...(caller
        ? { caller: { tenantId: caller.tenantId, sessionId: caller.sessionId, runId: caller.runId } }
        : {}),
    },
  };
}

/** Stores a checked pack: inserts, updates and removes its skills, records the pack, reports it. */
export function skillPackWrite(context: SkillContext): ReplicatedWrite<SkillPackChange, LoadSkillPackResult> {
  return {
    kind: "skills/load-pack",
    apply: (change, { atMs }) => {
      const { store } = context;
      const { scope, update } = change;
      const originRef = change.version ? `${change.pack}@${change.version}` : change.pack;
      const existing = store.existingInScope(scope);
      let loaded = 0;
      let updated = 0;
      let unchanged = 0;
      let notUpdated = 0;
      let removed = 0;
      const skippedLearned: string[] = [];
      const names = new Set<string>();
      for (const skill of change.skills) {
        names.add(skill.content.name);
        const old = existing.get(skill.content.name);
        if (!old) {
          store.insert(skill, scope, change.pack, originRef, atMs);
          loaded++;
        } else if (old.origin === "learned") skippedLearned.push(skill.content.name);
        else if (old.content_hash === skill.contentHash) unchanged++;
        else if (update) {
          store.update(old.seq, skill, change.pack, originRef, atMs);
          updated++;
        } else notUpdated++;
      }
      if (update) {
        for (const [name, old] of existing) {
          if (old.origin === "pack" && old.pack_name === change.pack && !names.has(name)) {
            store.remove(old.seq);
            removed++;
          }
        }
      }
      const total = change.skills.length;
      // A partial application must not make the next load look like a no-op.
      const fingerprint = notUpdated === 0 && skippedLearned.length === 0 ? change.fingerprint : "";
      store.recordPack(change.pack, scope, change.version, fingerprint, total, atMs);
      context.invalidateSearchIndex();
      const result: LoadSkillPackResult = {
        pack: change.pack,
        skillCount: total,
        loaded,
        updated,
        unchanged,
        removed,
        notUpdated,
        skippedLearned,
      };
      // In the load's transaction: a crash keeps both or neither.
      emitPackLoaded(context, result, change.caller, scope);
      return result;
    },
  };
}

function emitPackLoaded(
  context: SkillContext,
  result: LoadSkillPackResult,
  caller: Pick<Caller, "tenantId" | "sessionId" | "runId"> | undefined,
  scope: SkillScope,
): void {
  context.emit(
    "skill_pack_loaded",
    caller,
    {
      pack: result.pack,
      skill_count: result.skillCount,
      loaded_count: result.loaded,
      updated_count: result.updated,
      unchanged_count: result.unchanged,
      removed_count: result.removed,
    },
    scope.tenantId,
  );
}
