import { type Caller, eventScopeOf } from "../caller/caller.ts";
import type { LearningConfig } from "../config/index.ts";
import type { Db } from "../database/sqlite.ts";
import type { EventSink } from "../events/index.ts";
import type { StateWriter } from "../replication/writes.ts";
import type { LearnedEvidence } from "../search/evidence.ts";
import { FleetSearches } from "./fleet-searches.ts";
import {
  actorOf,
  type Choice,
  clip,
  LessonRate,
  type Outcome,
  ofKind,
  PASSED_OVER_MAX,
  skillKey,
  TEACHES,
} from "./lessons.ts";
import type { LearnedRequest } from "./model.ts";
import { ModelsInMemory, type RequestEmbedder } from "./models-in-memory.ts";
import { RecentSearches } from "./searches.ts";
import type { SharedSearches } from "./shared-searches.ts";
import { LearningStore } from "./store.ts";

/** How much an operator tenant's learned score counts in another tenant's search. */
const OPERATOR_SHARE = 0.5;

export interface LearningOptions {
  readonly db: Db;
  readonly writer: StateWriter;
  readonly events?: EventSink;
  readonly config: LearningConfig;
  /** The model meaning is read with; absent = learned requests match by words only. */
  readonly embedder?: RequestEmbedder;
  /** The searches every replica of the fleet can read (PostgreSQL); absent = this server's alone. */
  readonly shared?: SharedSearches;
  readonly onError?: (error: unknown) => void;
  /** Clock in epoch ms; injectable for tests. */
  readonly now?: () => number;
}

/**
 * Learning from use (docs/search.md "Learning from use"): searches are remembered for a window, a hit
 * chosen in the same run (or reported on) teaches the tenant's store, and each search reads the
 * tenant's learned requests as evidence. Nothing of one tenant is read for another.
 *
 * The parts: the searches (searches.ts here, fleet-searches.ts across replicas), what a lesson
 * teaches and how often (lessons.ts), the lessons stored (store.ts) and each tenant's model of them
 * in memory (models-in-memory.ts, model.ts).
 */
export class Learning {
  readonly store: LearningStore;
  private readonly searches: RecentSearches;
  /** The fleet's searches, with replicas; absent on a server alone. */
  private readonly fleet: FleetSearches | undefined;
  private readonly models: ModelsInMemory;
  private readonly rate: LessonRate;
  /** Lessons of choices still being written, by tenant: a search of the tenant waits for them. */
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  private readonly onError: (error: unknown) => void;

  constructor(private readonly options: LearningOptions) {
    const now = options.now ?? Date.now;
    this.onError = options.onError ?? (() => {});
    const windowMs = options.config.selectionWindowSeconds * 1000;
    this.searches = new RecentSearches(windowMs, now);
    this.fleet =
      options.shared && new FleetSearches(options.shared, this.searches, windowMs, now, this.onError);
    this.rate = new LessonRate(options.config.lessonsPerSecond, now);
    this.store = new LearningStore(
      options.db,
      options.writer,
      options.config,
      (tenantId, keys) => this.models.changed(tenantId, keys),
      options.events,
    );
    this.models = new ModelsInMemory(
      options.db,
      this.store,
      options.config.maxRequestsInMemory,
      options.embedder,
      now,
      this.onError,
    );
  }

  get enabled(): boolean {
    return this.options.config.enabled;
  }

  /** Learned requests in the tenants' models held in memory. */
  get requestsInMemory(): number {
    return this.models.requestsInMemory;
  }

  /** Remembers a search's hits; the id names it in reports. */
  remember(caller: Caller, request: string, hits: readonly string[]): string {
    return this.rememberSearch(caller.tenantId, caller.runId, request, hits);
  }

  /**
   * Remembers a skill search's request and hits (SearchSkills, GetRelevantSkills), so a report may
   * name it and teach the skill it reports on.
   */
  rememberSkills(caller: Caller, request: string, skills: readonly string[]): string {
    return this.rememberSearch(caller.tenantId, "", request, skills);
  }

  /** Remembers a search here and, with replicas, in the fleet's shared searches. */
  private rememberSearch(tenantId: string, runId: string, request: string, hits: readonly string[]): string {
    const search = this.searches.remember(tenantId, runId, request, hits);
    if (this.enabled && request !== "") this.fleet?.publish(search);
    return search.id;
  }

  /**
   * What the caller's tenant (and the operator's tenants, config `learning.operator_tenants`) learned
   * of tools, or of skills, for `request` (with its meaning `vectors`, when the model runs), or
   * undefined when they learned nothing of that kind: then the search is exactly as without learning.
   */
  async evidence(
    caller: Caller,
    request: string,
    vectors: readonly Float32Array[],
    kind: "tool" | "skill" = "tool",
  ): Promise<LearnedEvidence | undefined> {
    if (!this.enabled) return undefined;
    const scores = ofKind(await this.scoresOf(caller.tenantId, request, vectors), kind);
    // The operator's tenants teach everyone, at half strength; no other tenant's lessons are read.
    for (const tenant of this.options.config.operatorTenants) {
      if (tenant === caller.tenantId) continue;
      for (const [tool, score] of ofKind(await this.scoresOf(tenant, request, vectors), kind)) {
        const sum = (scores.get(tool) ?? 0) + OPERATOR_SHARE * score;
        scores.set(tool, Math.max(-1, Math.min(1, sum)));
      }
    }
    return scores.size === 0 ? undefined : { scores, weight: this.options.config.weight };
  }

  /** What `tenantId` alone learned of tools for `request`, once its own lessons in flight are written. */
  private async scoresOf(
    tenantId: string,
    request: string,
    vectors: readonly Float32Array[],
  ): Promise<Map<string, number>> {
    const pending = this.inFlight.get(tenantId);
    if (pending) await Promise.allSettled([...pending]);
    const model = await this.models.model(tenantId);
    return model.size === 0 ? new Map() : model.scores(request, vectors);
  }

  /**
   * The caller chose `tool` (canonical name): if a recent search of its run showed it, that search's
   * request teaches the tool, and the hits ranked above it count as passed over. Never fails the call
   * that chose: a problem is reported to onError.
   */
  async chosen(caller: Caller, tool: string, how: Choice): Promise<void> {
    if (!this.enabled) return;
    const shown =
      this.searches.latestShowing(caller.tenantId, caller.runId, tool) ??
      (await this.fleet?.showing(caller.tenantId, caller.runId, tool));
    if (!shown || shown.search.request === "") return;
    const { search, rank } = shown;
    const first = !search.chosen.has(tool);
    const delta = first ? TEACHES[how] : how === "dispatched" ? TEACHES.dispatchedAfterSelected : 0;
    if (delta === 0 || !this.rate.admit(actorOf(caller), false)) return;
    search.chosen.add(tool);
    const passedOver = first ? search.hits.slice(0, rank).filter((hit) => !search.chosen.has(hit)) : [];
    const written = this.store.teach({
      tenantId: caller.tenantId,
      actor: actorOf(caller),
      request: clip(search.request),
      deltas: [
        { tool, delta },
        ...passedOver.slice(0, PASSED_OVER_MAX).map((hit) => ({ tool: hit, delta: TEACHES.passedOver })),
      ],
      reportKey: "",
    });
    // The choice's call does not wait for the lesson (on replicas, a round trip to the shared log);
    // the tenant's next search on this server does.
    const pending = this.inFlight.get(caller.tenantId) ?? new Set();
    this.inFlight.set(caller.tenantId, pending);
    pending.add(written);
    try {
      await written;
    } catch (error) {
      this.onError(error);
    } finally {
      pending.delete(written);
      if (pending.size === 0) this.inFlight.delete(caller.tenantId);
    }
  }

  /**
   * An agent's verdict on a tool (canonical, visible to the caller) or a skill: a tool's teaches when
   * `searchId` names a full-text search of the caller's tenant that showed it; anything else is an
   * event only. A repeated key is acknowledged as a duplicate and changes nothing. `known` is false
   * for a search id this server does not remember for the tenant (unknown, expired, another's).
   */
  async report(
    caller: Caller,
    report: {
      kind: "tool" | "skill";
      searchId: string;
      name: string;
      outcome: Outcome;
      note: string;
      key: string;
    },
  ): Promise<{ learned: boolean; duplicate: boolean; known: boolean }> {
    const search =
      report.searchId === ""
        ? undefined
        : (this.searches.find(caller.tenantId, report.searchId) ??
          (await this.fleet?.find(caller.tenantId, report.searchId)));
    const learn =
      this.enabled && search !== undefined && search.request !== "" && search.hits.includes(report.name);
    // Over the rate, an explicit report is refused (RESOURCE_EXHAUSTED) rather than silently not learned.
    if (learn) this.rate.admit(actorOf(caller), true);
    const scope = eventScopeOf(caller);
    const common = { outcome: report.outcome, search_id: report.searchId, note: report.note };
    const event =
      report.kind === "tool"
        ? {
            type: "tool_outcome_reported" as const,
            ...scope,
            attributes: { tool: report.name, learned: learn, ...common },
          }
        : {
            type: "skill_outcome_reported" as const,
            ...scope,
            attributes: { skill: report.name, learned: learn, ...common },
          };
    const delta = TEACHES[report.outcome];
    const applied = await this.store.teach({
      tenantId: caller.tenantId,
      actor: actorOf(caller),
      request: learn ? clip(search.request) : "",
      deltas: learn ? [{ tool: report.kind === "skill" ? skillKey(report.name) : report.name, delta }] : [],
      reportKey: report.key === "" ? "" : `${report.kind}:${report.key}`,
      event,
    });
    if (applied && learn && delta > 0) search.chosen.add(report.name);
    return {
      learned: applied && learn,
      duplicate: !applied,
      known: report.searchId === "" || search !== undefined,
    };
  }

  /** What `tenantId` learned (of `tool` only, when given), heaviest first. */
  show(tenantId: string, tool = ""): Promise<LearnedRequest[]> {
    return this.models.show(tenantId, tool);
  }

  /**
   * Resolves once every learned request of `tenantId` has its vector (benches, tests); searches wait
   * only for a few.
   */
  settled(tenantId: string): Promise<void> {
    return this.models.settled(tenantId);
  }
}
