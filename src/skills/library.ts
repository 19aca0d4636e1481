import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import { afterCommit, writeTransaction } from "../database/transaction.ts";
import type { EventSink } from "../events/event.ts";
import type { ReplicatedWrite, StateWriter } from "../replication/writes.ts";
import type { SemanticQuery } from "../search/evidence.ts";
import type { ModelWords } from "../search/model-words.ts";
import { DEFAULT_GOOD_MATCH_SCORE } from "../search/scores.ts";
import { runInSlices } from "../slices.ts";
import { SkillContext } from "./context.ts";
import {
  type RenderSkillDirectoryInput,
  type RenderSkillDirectoryResult,
  renderSkillDirectory,
} from "./directory.ts";
import {
  type LoadSkillPackInput,
  type LoadSkillPackResult,
  type PackSettings,
  prepareSkillPack,
  reportWritten,
  type SkillPackChange,
  skillPackWrite,
} from "./load.ts";
import { DEFAULT_PACK_LIMITS, type PackLimits } from "./pack.ts";
import { skillMeaning } from "./ranked.ts";
import {
  type GetSkillsInput,
  type GetSkillsResult,
  getSkillsInSteps,
  type ListSkillsInput,
  type ListSkillsResult,
  listSkills,
} from "./read.ts";
import {
  type GetRelevantSkillsInput,
  type GetRelevantSkillsResult,
  getRelevantSkillsInSteps,
  type PreparedTask,
  prepareTask,
} from "./relevant.ts";
import type { CallOptions } from "./sanitize.ts";
import {
  type PreparedSkillSearch,
  prepareSkillSearch,
  type SearchSkillsInput,
  type SearchSkillsResult,
  searchSkills,
} from "./search.ts";
import { partitionKey, type SkillWordIndex } from "./word-index.ts";

export interface SkillLibraryOptions {
  readonly db: Db;
  readonly events?: EventSink;
  /** Redact e-mails, phone numbers, tokens and URL query strings from returned text (default true). */
  readonly redaction?: boolean;
  /** A search whose best hit scores below this reports "weak" (default DEFAULT_GOOD_MATCH_SCORE: scores mean what tool scores mean). */
  readonly goodMatchScore?: number;
  /** The operator's synonyms (config `tool_search.synonyms`): skill search reads them as tool search does. */
  readonly synonyms?: Readonly<Record<string, readonly string[]>>;
  /** The sentence model's words (hybrid search): a request's meaning text is repaired against them too. */
  readonly modelWords?: ModelWords;
  /** Shown first by renderSkillDirectory (config `pinned_skill_names`). */
  readonly pinnedSkillNames?: readonly string[];
  /** Server-side pack folders must lie inside one of these (relative pack paths resolve against the first). */
  readonly packRoots?: readonly string[];
  readonly packLimits?: Partial<PackLimits>;
  readonly now?: () => number;
  /** Told after every pack load (e.g. to bring skill vectors up to date; see `embeddingTexts`). */
  readonly onSkillsChanged?: () => void;
  /** How packs are stored by loadSharedSkillPack: the server's (shared by replicas). */
  readonly writer?: StateWriter;
  /** Told when a skill's use could not be counted (the read it counts has answered already). */
  readonly onError?: (error: unknown) => void;
}

/**
 * The skill library (the domain behind the proto's SkillService): pack loading (load.ts), scoped search (search.ts), get/list (read.ts), pre-flight
 * injection (relevant.ts) and the directory (directory.ts), over one shared context (context.ts).
 */
export class SkillLibrary {
  private readonly context: SkillContext;
  private readonly packs: PackSettings;
  private readonly pinned: readonly string[];
  private readonly onSkillsChanged: (() => void) | undefined;
  private readonly packWrite: ReplicatedWrite<SkillPackChange, LoadSkillPackResult>;

  constructor(options: SkillLibraryOptions) {
    this.context = new SkillContext({
      db: options.db,
      events: options.events,
      redaction: options.redaction ?? true,
      goodMatchScore: options.goodMatchScore ?? DEFAULT_GOOD_MATCH_SCORE,
      ...(options.synonyms ? { synonyms: options.synonyms } : {}),
      ...(options.modelWords ? { modelWords: options.modelWords } : {}),
      now: options.now ?? Date.now,
      ...(options.writer ? { writer: options.writer } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    });
    const stored = skillPackWrite(this.context);
    this.packWrite = {
      kind: stored.kind,
      apply: (change, context) => {
        const result = stored.apply(change, context);
        // Every replica's skills changed, whoever loaded the pack.
        afterCommit(options.db, () => this.onSkillsChanged?.());
        return result;
      },
    };
    this.packs = {
      packRoots: options.packRoots ?? [process.cwd()],
      limits: { ...DEFAULT_PACK_LIMITS, ...options.packLimits },
    };
    this.pinned = options.pinnedSkillNames ?? [];
    this.onSkillsChanged = options.onSkillsChanged;
  }

  /** Validates a whole pack, then stores it in one transaction on this database. */
  loadSkillPack(input: LoadSkillPackInput, caller?: Caller): LoadSkillPackResult {
    const prepared = this.prepare(input, caller);
    if ("unchanged" in prepared) return prepared.unchanged;
    const atMs = this.context.now();
    const result = writeTransaction(this.context.store.db, () =>
      this.packWrite.apply(prepared.change, { atMs }),
    );
    reportWritten(input, result);
    return result;
  }

  /** The same through the server's writer: with replicas, every one stores the pack (the server's path). */
  async loadSharedSkillPack(input: LoadSkillPackInput, caller?: Caller): Promise<LoadSkillPackResult> {
    const prepared = this.prepare(input, caller);
    if ("unchanged" in prepared) return prepared.unchanged;
    const { change } = prepared;
    const result = await this.context.writer.write(this.packWrite, change, change.scope.tenantId);
    reportWritten(input, result);
    return result;
  }

  /** The skill writes every replica applies (src/replication). */
  get writes(): readonly ReplicatedWrite<never, unknown>[] {
    return [this.packWrite, this.context.usedWrite];
  }

  private prepare(input: LoadSkillPackInput, caller: Caller | undefined) {
    const prepared = prepareSkillPack(this.context, this.packs, input, caller);
    if ("unchanged" in prepared) this.onSkillsChanged?.();
    return prepared;
  }

  /** Skills in the store, every scope's (metrics). */
  get size(): number {
    return this.context.store.get<{ n: number }>("SELECT count(*) AS n FROM skills", [])?.n ?? 0;
  }

  /**
   * Every skill as semantic search stores it: under its scope's partition and its name (the word
   * index's VectorDocs), with its content hash, and the text embedded (title, description, trigger),
   * made only when asked.
   */
  embeddingTexts(): { owner: string; name: string; hash: string; text: () => string }[] {
    return this.context.store
      .all<{
        name: string;
        scope_kind: string;
        tenant_id: string;
        project_id: string;
        content_hash: string;
        title: string;
        description: string;
        trigger_text: string;
      }>(
        "SELECT name, scope_kind, tenant_id, project_id, content_hash, title, description, trigger_text FROM skills",
        [],
      )
      .map((s) => ({
        owner: partitionKey(s.scope_kind, s.tenant_id, s.project_id),
        name: s.name,
        hash: s.content_hash,
        text: () => [s.title, s.description, s.trigger_text].filter((part) => part.trim() !== "").join(": "),
      }));
  }

  /**
   * Resolves once the skills' word index holds every change so far, built in slices between other
   * calls: a search that awaits it never builds the index at once (searchSkills would, for a caller
   * that did not).
   */
  async ready(): Promise<void> {
    await this.context.ready();
  }

  /** Searches the caller's skills: prepares the request, then runs it (searchPrepared). */
  searchSkills(caller: Caller, input: SearchSkillsInput, options: CallOptions = {}): SearchSkillsResult {
    return this.searchPrepared(caller, this.prepareSearch(caller, input), options);
  }

  /**
   * Checks a request and reads it once, over the newest build: its meaning (searchMeaning) and its
   * search (searchPrepared) both consume it, so nothing is embedded for a search that refuses.
   */
  prepareSearch(caller: Caller, input: SearchSkillsInput): PreparedSkillSearch {
    return prepareSkillSearch(this.context, caller, input);
  }

  /** Runs a prepared search, applying what is known of the request besides its words (full text only). */
  searchPrepared(caller: Caller, search: PreparedSkillSearch, options: CallOptions = {}): SearchSkillsResult {
    return searchSkills(this.context, caller, search, options);
  }

  /** What semantic search needs of a full-text search: the texts it is embedded as, the skills it may find. */
  searchMeaning(search: PreparedSkillSearch): SemanticQuery<SkillWordIndex> {
    return skillMeaning(this.context, search);
  }

  /** Checks a GetRelevantSkills call and reads its task once (taskMeaning and relevantPrepared consume it). */
  prepareTask(caller: Caller, input: GetRelevantSkillsInput): PreparedTask {
    return prepareTask(this.context, caller, input);
  }

  /** What semantic search needs of a prepared task: the texts it is embedded as, the skills it may find. */
  taskMeaning(task: PreparedTask): SemanticQuery<SkillWordIndex> {
    return skillMeaning(this.context, task);
  }

  /** Made visible a slice at a time between other calls: large skills never hold the event loop. */
  getSkills(caller: Caller, input: GetSkillsInput, options: CallOptions = {}): Promise<GetSkillsResult> {
    return toTheEnd(getSkillsInSteps(this.context, caller, input, options));
  }

  listSkills(caller: Caller, input: ListSkillsInput = {}, options: CallOptions = {}): ListSkillsResult {
    return listSkills(this.context, caller, input, options);
  }

  /** The skills for a task, as one block to put in a prompt: prepares the call, then runs it (relevantPrepared). */
  async getRelevantSkills(
    caller: Caller,
    input: GetRelevantSkillsInput,
    options: CallOptions = {},
  ): Promise<GetRelevantSkillsResult> {
    await this.context.ready();
    return this.relevantPrepared(caller, this.prepareTask(caller, input), options);
  }

  /** Made visible a slice at a time between other calls, as getSkills. */
  relevantPrepared(
    caller: Caller,
    task: PreparedTask,
    options: CallOptions = {},
  ): Promise<GetRelevantSkillsResult> {
    return toTheEnd(getRelevantSkillsInSteps(this.context, caller, task, options));
  }

  renderSkillDirectory(
    caller: Caller,
    input: RenderSkillDirectoryInput = {},
    options: CallOptions = {},
  ): RenderSkillDirectoryResult {
    return renderSkillDirectory(this.context, this.pinned, caller, input, options);
  }
}

/** Runs `steps` to its end a slice at a time (src/text/slices.ts): nothing cancels it, so it ends. */
async function toTheEnd<T>(steps: Iterator<unknown, T>): Promise<T> {
  return (await runInSlices(steps, () => true)) as T;
}
