import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import type { EventAttributeValue, EventSink, EventType } from "../events/event.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../replication/writes.ts";
import { type QueryReadings, queryReadings } from "../search/fts.ts";
import type { ModelWords } from "../text/model-words.ts";
import { synonymTable } from "../text/synonyms.ts";
import { SkillStore } from "./store.ts";
import { SkillWordIndex } from "./word-index.ts";

/** What every skill operation shares: the store, the search index over it, events, the clock and redaction. */
export class SkillContext {
  readonly store: SkillStore;
  private index: SkillWordIndex | undefined;
  private indexDataVersion = -1;

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
    this.index = undefined;
  }

  /** The in-memory index, rebuilt when this service or another connection changed the database. */
  searchIndex(): SkillWordIndex {
    // A cached statement: db.pragma() prepares anew on every call, a measurable cost per search.
    const dataVersion =
      this.store.get<{ data_version: number }>("PRAGMA data_version", [])?.data_version ?? -1;
    if (!this.index || dataVersion !== this.indexDataVersion) {
      this.index = SkillWordIndex.build(this.store.db);
      this.indexDataVersion = dataVersion;
    }
    return this.index;
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
