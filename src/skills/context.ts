import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import type { EventAttributeValue, EventSink, EventType } from "../events/event.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../replication/writes.ts";
import { type QueryReadings, queryReadings } from "../search/fts.ts";
import type { ModelWords } from "../search/model-words.ts";
import { synonymTable } from "../search/synonyms.ts";
import { runInSlices, runToEnd } from "../text/slices.ts";
import { SkillStore } from "./store.ts";
import { SkillWordIndex } from "./word-index.ts";

/** A build of the word index under way, for the skills' version it started at. */
interface IndexBuild {
  readonly version: string;
  readonly steps: Generator<void, SkillWordIndex>;
  readonly done: Promise<SkillWordIndex>;
  readonly settle: { resolve(index: SkillWordIndex): void; reject(error: unknown): void };
}

/** What every skill operation shares: the store, the search index over it, events, the clock and redaction. */
export class SkillContext {
  readonly store: SkillStore;
  private index: SkillWordIndex | undefined;
  /** The skills' version the index holds (indexVersion), and the build under way, if any. */
  private indexVersion = "";
  private build: IndexBuild | undefined;
  /** Writes through this connection, which SQLite's data_version does not count. */
  private localChanges = 0;

  private readonly events: EventSink | undefined;
  /** Redact e-mails, phone numbers, tokens and URL query strings from returned text. */
  readonly redaction: boolean;
  /** A search whose best hit scores below this reports "weak" (config `skills.good_match_score`). */
  readonly goodMatchScore: number;
  /** Abbreviations and synonyms by analysed word: built-in plus the operator's, as tool search reads them. */
  readonly readings: QueryReadings;
  /** The sentence model's words, which a request's meaning text is repaired against too. */
  readonly modelWords: ModelWords | undefined;
  readonly now: () => number;
  /** How skill writes are made: the server's (shared by replicas); default this database alone. */
  readonly writer: StateWriter;
  private readonly onError: (error: unknown) => void;

  constructor(options: {
    db: Db;
    events: EventSink | undefined;
    redaction: boolean;
    goodMatchScore: number;
    synonyms?: Readonly<Record<string, readonly string[]>>;
    modelWords?: ModelWords;
    now: () => number;
    writer?: StateWriter;
    onError?: (error: unknown) => void;
  }) {
    this.store = new SkillStore(options.db);
    this.events = options.events;
    this.redaction = options.redaction;
    this.goodMatchScore = options.goodMatchScore;
    this.readings = queryReadings(synonymTable(options.synonyms));
    this.modelWords = options.modelWords;
    this.now = options.now;
    this.writer = options.writer ?? new LocalWriter(options.db, options.now);
    this.onError = options.onError ?? (() => {});
  }

  /** Counts a use of each skill: the skill directory lists the most recently used first. */
  readonly usedWrite: ReplicatedWrite<{ readonly ids: readonly string[] }, void> = {
    kind: "skills/used",
    apply: ({ ids }, { atMs }) => this.store.markUsed(ids, atMs),
  };

  /** Records that these skills were handed to a caller; the read never waits for it. */
  markUsed(ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.writer.write(this.usedWrite, { ids }).catch(this.onError);
  }

  /** Call after writing to the skills table through another module on the same connection. */
  invalidateSearchIndex(): void {
    this.localChanges++;
  }

  /**
   * The word index of the skills as they are now. When they changed, it is built in slices between
   * other calls (a large library is seconds of work), and a search that awaits this reads it whole.
   */
  ready(): Promise<SkillWordIndex> {
    const version = this.skillsVersion();
    if (this.index && this.indexVersion === version) return Promise.resolve(this.index);
    return (this.build?.version === version ? this.build : this.startBuild(version)).done;
  }

  /**
   * The word index, at once: the build of every change so far, run to its end now when it is not
   * ready (the fallback for callers that did not await `ready`).
   */
  searchIndex(): SkillWordIndex {
    const version = this.skillsVersion();
    if (this.index && this.indexVersion === version) return this.index;
    const build = this.build?.version === version ? this.build : this.startBuild(version);
    try {
      return this.adopt(build, runToEnd(build.steps));
    } catch (error) {
      if (this.build === build) this.build = undefined;
      throw error;
    }
  }

  /** Another connection's commits (data_version) and this one's writes. */
  private skillsVersion(): string {
    // A cached statement: db.pragma() prepares anew on every call, a measurable cost per search.
    const dataVersion = this.store.get<{ data_version: number }>("PRAGMA data_version", [])?.data_version;
    return `${dataVersion ?? -1}:${this.localChanges}`;
  }

  private startBuild(version: string): IndexBuild {
    let settle!: { resolve: (index: SkillWordIndex) => void; reject: (error: unknown) => void };
    const done = new Promise<SkillWordIndex>((resolve, reject) => {
      settle = { resolve, reject };
    });
    // A build nobody awaits may still fail; its error reaches whoever awaits the next one.
    done.catch(() => {});
    const build: IndexBuild = { version, steps: SkillWordIndex.steps(this.store.db), done, settle };
    this.build = build;
    runInSlices(build.steps, () => this.build === build).then(
      (index) => {
        if (index) this.adopt(build, index);
      },
      (error: unknown) => {
        if (this.build === build) this.build = undefined;
        build.settle.reject(error);
      },
    );
    return build;
  }

  private adopt(build: IndexBuild, index: SkillWordIndex): SkillWordIndex {
    if (this.build === build) this.build = undefined;
    this.index = index;
    this.indexVersion = build.version;
    build.settle.resolve(index);
    return index;
  }

  emit(
    type: EventType,
    caller: Pick<Caller, "tenantId" | "sessionId" | "runId"> | undefined,
    attributes: Record<string, EventAttributeValue>,
    tenantId?: string,
  ): void {
    this.events?.emit({
      type,
      tenantId: caller?.tenantId ?? tenantId ?? "",
      sessionId: caller?.sessionId ?? "",
      runId: caller?.runId ?? "",
      attributes,
    });
  }
}
