import type * as http from "node:http";
import type * as http2 from "node:http2";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { StoredEvent } from "../events/index.ts";
import { writeHead } from "../http-response.ts";
import type { ConnectionCounts } from "./transport/connections.ts";
import { type CallObserver, type MethodRoute, methodPath, observeRoute } from "./transport/rpc.ts";
import { codeName } from "./transport/rpc-errors.ts";

/** Live figures the metrics read when scraped (catalog size, subscribers, …). */
export interface MetricSources {
  readonly toolCount: () => number;
  readonly skillCount: () => number;
  readonly eventSubscribers: () => number;
  /** Learned requests in the tenants' models held in memory (learning.max_requests_in_memory bounds it). */
  readonly learnedRequestsInMemory: () => number;
  /** The slowest subscriber's lag in events, and overflows and retention gaps so far. */
  readonly eventSubscriberLag: () => { maxLag: number; overflows: number; gaps: number };
  /** The configured MCP servers' health and last sync. */
  readonly mcpSources: () => readonly { id: string; healthy: boolean; lastSyncMs: number | undefined }[];
  /** The transport's connection figures. */
  readonly connections: () => ConnectionCounts;
  /**
   * Query texts a second the model embeds at its pace lately (Embedder.capacity); absent without
   * semantic ranking.
   */
  readonly semanticCapacity?: () => number;
  /** A replica's view of its shared database, read at each scrape (src/replication); absent on SQLite alone. */
  readonly replica?: { readonly reachable: boolean; readonly appliedSeq: number };
}

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Prometheus metrics (`GET /metrics` on the service port): calls by method, code and protocol with
 * their latency, and what the event log records — searches, activations, skills retrieved, usage
 * tokens and cost — counted from each event once it is committed, so a rolled-back change counts
 * nothing. Plus catalog and skill counts and the process's own metrics. Under `serve --workers` the
 * workers' metrics are summed, except where a gauge names its aggregator: figures every worker holds
 * alike (the catalog's size, an MCP source's state) or the fleet's worst (a replica's lag).
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly calls: Counter<"method" | "code" | "protocol">;
  private readonly callSeconds: Histogram<"method" | "protocol">;
  private readonly searches: Counter<"kind" | "requested_type" | "effective_type">;
  private readonly zeroResultSearches: Counter<"kind">;
  private readonly semanticSearches: Counter<"kind" | "status" | "tier">;
  private readonly lateTexts: Counter<"kind">;
  private readonly searchResults: Histogram<"kind">;
  private readonly activations: Counter<"scope" | "source">;
  private readonly skillsRetrieved: Counter;
  private readonly events: Counter<"type">;
  private readonly usageTokens: Counter<"provider" | "model" | "kind">;
  private readonly usageCost: Counter<"provider" | "model">;
  private readonly denied: Counter<"method" | "code">;
  private readonly toolCalls: Counter<"source" | "outcome">;
  private readonly toolCallSeconds: Histogram<"source">;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: "wayfind_" });
    this.calls = new Counter({
      name: "wayfind_calls_total",
      help: "RPC calls by method, gRPC code and protocol.",
      labelNames: ["method", "code", "protocol"],
      registers,
    });
    this.toolCalls = new Counter({
      name: "wayfind_tool_calls_total",
      help: "Tools executed through wayfind (CallTool, MCP tool_call) by source and outcome (ok, error, failed, timeout, cancelled).",
      labelNames: ["source", "outcome"],
      registers,
    });
    this.toolCallSeconds = new Histogram({
      name: "wayfind_tool_call_duration_seconds",
      help: "How long the source of an executed tool took to answer.",
      labelNames: ["source"],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 120],
      registers,
    });
    this.callSeconds = new Histogram({
      name: "wayfind_call_duration_seconds",
      help: "RPC call latency (for a stream: until its last message).",
      labelNames: ["method", "protocol"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    });
    this.denied = new Counter({
      name: "wayfind_calls_denied_total",
      help: "Calls refused for their credentials, role, tenant or per-principal limits (the audit log has each).",
      labelNames: ["method", "code"],
      registers,
    });
    this.searches = new Counter({
      name: "wayfind_searches_total",
      help: "Tool and skill searches by requested and effective type.",
      labelNames: ["kind", "requested_type", "effective_type"],
      registers,
    });
    this.semanticSearches = new Counter({
      name: "wayfind_search_semantic_total",
      help:
        "Full-text searches by how meaning took part: status ready, partial (some tools' vectors, or the " +
        "request's meaning within tool_search.semantic.max_wait_ms, not ready), unavailable, off; tier " +
        "model (the model read the request), static (its static tier did: the model was not in time), none.",
      labelNames: ["kind", "status", "tier"],
      registers,
    });
    this.lateTexts = new Counter({
      name: "wayfind_search_texts_late_total",
      help:
        "Texts of requests ranked by words because the model did not embed them within " +
        "tool_search.semantic.max_wait_ms and no static tier read them.",
      labelNames: ["kind"],
      registers,
    });
    this.zeroResultSearches = new Counter({
      name: "wayfind_searches_zero_results_total",
      help: "Searches that found nothing (an agent asked for a tool or skill that is not there).",
      labelNames: ["kind"],
      registers,
    });
    this.searchResults = new Histogram({
      name: "wayfind_search_results",
      help: "Results per search.",
      labelNames: ["kind"],
      buckets: [0, 1, 2, 3, 5, 8, 10, 20],
      registers,
    });
    this.activations = new Counter({
      name: "wayfind_tool_activations_total",
      help: "Deferred tools activated, by scope and by how (explicit, resolve, lazy_group).",
      labelNames: ["scope", "source"],
      registers,
    });
    this.skillsRetrieved = new Counter({
      name: "wayfind_skills_retrieved_total",
      help: "Skills injected by GetRelevantSkills.",
      registers,
    });
    this.events = new Counter({
      name: "wayfind_events_total",
      help: "Events committed to the event log, by type.",
      labelNames: ["type"],
      registers,
    });
    this.usageTokens = new Counter({
      name: "wayfind_usage_tokens_total",
      help: "Model tokens recorded with RecordUsage, by kind (input, output, cache_read, cache_write).",
      labelNames: ["provider", "model", "kind"],
      registers,
    });
    this.usageCost = new Counter({
      name: "wayfind_usage_cost_usd_total",
      help: "Cost of the recorded usage in USD (records of unknown price count nothing).",
      labelNames: ["provider", "model"],
      registers,
    });
    new Gauge({
      name: "wayfind_connections_open",
      help: "Open client connections, every protocol (server.max_connections caps them).",
      registers,
      collect() {
        this.set(sources.connections().open);
      },
    });
    new Counter({
      name: "wayfind_connections_shed_total",
      help: "Idle connections closed at server.max_connections to admit a new one.",
      registers,
      collect() {
        this.reset();
        this.inc(sources.connections().shed);
      },
    });
    new Counter({
      name: "wayfind_connections_refused_total",
      help: "Connections refused at server.max_connections with none idle to close instead.",
      registers,
      collect() {
        this.reset();
        this.inc(sources.connections().refused);
      },
    });
    const capacity = sources.semanticCapacity;
    if (capacity)
      new Gauge({
        name: "wayfind_semantic_capacity_texts_per_second",
        help:
          "Request texts a second the model embeds at its pace lately (a request of a few words: one " +
          "text); searches past it are read by the model's static tier.",
        registers,
        collect() {
          this.set(capacity());
        },
      });
    new Gauge({
      name: "wayfind_tools",
      aggregator: "max",
      help: "Tools in the catalog (every tenant's).",
      registers,
      collect() {
        this.set(sources.toolCount());
      },
    });
    new Gauge({
      name: "wayfind_skills",
      aggregator: "max",
      help: "Skills in the store (every scope's).",
      registers,
      collect() {
        this.set(sources.skillCount());
      },
    });
    new Gauge({
      name: "wayfind_event_subscriber_lag",
      aggregator: "max",
      help: "Events the slowest watch stream has yet to receive (newest id minus its cursor).",
      registers,
      collect() {
        this.set(sources.eventSubscriberLag().maxLag);
      },
    });
    new Gauge({
      name: "wayfind_event_subscriber_overflows",
      help: "Times the open watch streams' live queues overflowed (they then read from SQLite; nothing is lost).",
      registers,
      collect() {
        this.set(sources.eventSubscriberLag().overflows);
      },
    });
    new Gauge({
      name: "wayfind_event_subscriber_gaps",
      help: "Times retention deleted events an open watch stream had not received (those events are lost to it).",
      registers,
      collect() {
        this.set(sources.eventSubscriberLag().gaps);
      },
    });
    new Gauge({
      name: "wayfind_mcp_source_up",
      aggregator: "max",
      help: "1 while an MCP server's tools are in sync, 0 while it is down or its last sync failed.",
      labelNames: ["source"],
      registers,
      collect() {
        for (const s of sources.mcpSources()) this.set({ source: s.id }, s.healthy ? 1 : 0);
      },
    });
    new Gauge({
      name: "wayfind_mcp_last_sync_duration_seconds",
      aggregator: "max",
      help: "How long an MCP server's last successful sync took (tools/list and registration).",
      labelNames: ["source"],
      registers,
      collect() {
        for (const s of sources.mcpSources())
          if (s.lastSyncMs !== undefined) this.set({ source: s.id }, s.lastSyncMs / 1000);
      },
    });
    new Gauge({
      name: "wayfind_learned_requests_in_memory",
      help: "Learned requests of the tenants' models held in memory (learning.max_requests_in_memory).",
      registers,
      collect() {
        this.set(sources.learnedRequestsInMemory());
      },
    });
    new Gauge({
      name: "wayfind_event_subscribers",
      help: "Open event watch streams.",
      registers,
      collect() {
        this.set(sources.eventSubscribers());
      },
    });
    const replica = sources.replica;
    if (replica === undefined) return;
    new Gauge({
      name: "wayfind_replica_shared_database_up",
      aggregator: "min",
      help: "1 while this replica's shared PostgreSQL answers, 0 in degraded mode (writes refused, reads stale).",
      registers,
      collect() {
        this.set(replica.reachable ? 1 : 0);
      },
    });
    new Gauge({
      name: "wayfind_replica_applied_change",
      aggregator: "min",
      help: "The last change of the shared log this replica applied (compare replicas: the gap is lag).",
      registers,
      collect() {
        this.set(replica.appliedSeq);
      },
    });
  }

  /** The routes with every call counted and timed (its code as the caller sees it). */
  observe(routes: readonly MethodRoute[]): MethodRoute[] {
    return routes.map((route) => observeRoute(route, this.callObserver(methodPath(route.method))));
  }

  /** Counts a refused call (src/server/pipeline.ts, with its audit log line). */
  callDenied(method: string, code: string): void {
    this.denied.inc({ method, code });
  }

  /** Counts a committed event (EventLog's onDelivered). */
  eventCommitted(event: StoredEvent): void {
    const a = event.attributes;
    this.events.inc({ type: event.type });
    switch (event.type) {
      case "tool_search_query":
      case "skill_search_query": {
        const kind = event.type === "tool_search_query" ? "tool" : "skill";
        const requested = String(a.requested_type ?? a.search_type ?? "");
        this.searches.inc({
          kind,
          requested_type: requested,
          effective_type: String(a.effective_type ?? requested),
        });
        if (requested === "fts")
          this.semanticSearches.inc({
            kind,
            status: String(a.semantic_status ?? "off"),
            tier: String(a.semantic_tier ?? "none"),
          });
        const late = Number(a.semantic_texts_pending ?? 0);
        if (late > 0) this.lateTexts.inc({ kind }, late);
        const count = Number(a.result_count ?? 0);
        this.searchResults.observe({ kind }, count);
        if (count === 0) this.zeroResultSearches.inc({ kind });
        break;
      }
      case "tool_activated":
        this.activations.inc({ scope: String(a.scope ?? ""), source: String(a.source ?? "") });
        break;
      case "tool_called": {
        const source = String(a.source ?? "");
        this.toolCalls.inc({ source, outcome: String(a.outcome ?? "") });
        this.toolCallSeconds.observe({ source }, Number(a.duration_ms ?? 0) / 1000);
        break;
      }
      case "skills_retrieved":
        this.skillsRetrieved.inc(Number(a.skill_count ?? 0));
        break;
      case "usage_recorded": {
        const labels = { provider: String(a.provider ?? ""), model: String(a.model ?? "") };
        for (const [kind, attribute] of [
          ["input", "input_tokens"],
          ["output", "output_tokens"],
          ["cache_read", "cache_read_input_tokens"],
          ["cache_write", "cache_creation_input_tokens"],
        ] as const)
          this.usageTokens.inc({ ...labels, kind }, Number(a[attribute] ?? 0));
        if (typeof a.cost_usd === "number") this.usageCost.inc(labels, a.cost_usd);
        break;
      }
      default:
        break;
    }
  }

  /**
   * `GET /metrics` in the Prometheus text format (`scrape`'s: by default this registry's); false for
   * any other path.
   */
  endpoint(scrape = () => this.registry.metrics()): (request: Request, response: Response) => boolean {
    return (request, response) => {
      if (request.url?.split("?", 1)[0] !== "/metrics") return false;
      if (request.method !== "GET") {
        writeHead(response, 405, { allow: "GET", "content-type": "text/plain" });
        response.end("/metrics answers GET\n");
        return true;
      }
      scrape().then(
        (text) => {
          writeHead(response, 200, {
            "content-type": this.registry.contentType,
            "cache-control": "no-store",
          });
          response.end(text);
        },
        () => {
          writeHead(response, 500, { "content-type": "text/plain" });
          response.end("metrics failed\n");
        },
      );
      return true;
    };
  }

  private callObserver(method: string): CallObserver {
    return {
      begin: (_input, context) => {
        const started = performance.now();
        const protocol = context.protocolName;
        const finish = (code: string) => {
          this.calls.inc({ method, code, protocol });
          this.callSeconds.observe({ method, protocol }, (performance.now() - started) / 1000);
        };
        return {
          succeeded: () => finish("ok"),
          failed: (error) => {
            finish(codeName(error));
            return error;
          },
        };
      },
    };
  }
}
