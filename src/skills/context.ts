import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import type { EventAttributeValue, EventSink, EventType } from "../events/event.ts";
import { LruCache } from "../lru.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../replication/writes.ts";
import { type QueryReadings, queryReadings } from "../search/fts.ts";
import type { ModelWords } from "../search/model-words.ts";
import { synonymTable } from "../search/synonyms.ts";
import { VersionedIndex } from "../search/versioned-index.ts";
import { SkillStore } from "./store.ts";
import { SkillWordIndex } from "./word-index.ts";

/** What every skill operation shares: the store, the search index over it, events, the clock and redaction. */
export class SkillContext {
  readonly store: SkillStore;
  /** The versioned builds of the word index (the lifecycle every catalog shares). */
  private readonly builds: VersionedIndex<SkillWordIndex>;
  /** Writes through this connection, which SQLite's data_version does not count. */
  private localChanges = 0;
  /** The skills' version: counts the changes seen (data_version or localChanges moved) since start. */
  private version = 0;
  private seenVersion = "";
  /** Listings' total counts, by what was counted, at the version they were counted at. */
  private readonly counts = new LruCache<string, { readonly version: number; readonly count: number }>(256);

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
    this.builds = new VersionedIndex({
      version: () => this.skillsVersion(),
      build: () => SkillWordIndex.steps(this.store.db),
    });
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
    return this.builds.ready();
  }

  /**
   * The word index, at once: the build of every change so far, run to its end now when it is not
   * ready (the fallback for callers that did not await `ready`).
   */
  searchIndex(): SkillWordIndex {
    return this.builds.current();
  }

  /**
   * `count()`, the total of a listing described by `key`, counted once per version of the skills: a
   * caller paging through a large library does not count it again for every page.
   */
  countOf(key: string, count: () => number): number {
    const version = this.skillsVersion();
    const cached = this.counts.get(key);
    if (cached?.version === version) return cached.count;
    const counted = count();
    this.counts.set(key, { version, count: counted });
    return counted;
  }

  /** Counts another connection's commits (data_version) and this one's writes as changes. */
  private skillsVersion(): number {
    // A cached statement: db.pragma() prepares anew on every call, a measurable cost per search.
    const dataVersion = this.store.get<{ data_version: number }>("PRAGMA data_version", [])?.data_version;
    const seen = `${dataVersion ?? -1}:${this.localChanges}`;
    if (seen !== this.seenVersion) {
      this.seenVersion = seen;
      this.version++;
    }
    return this.version;
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
