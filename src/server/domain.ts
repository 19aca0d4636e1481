import { dirname } from "node:path";
import type { Logger } from "pino";
import { HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.ts";
import { createAccessControl } from "../access/index.ts";
import { ActivationStore, compileLazyGroups } from "../activation/index.ts";
import { ApiKeyStore, KeyBook, LocalKeyRecords, SharedKeyRecords } from "../auth/index.ts";
import type { Closers } from "../closers.ts";
import type { WayfindConfig } from "../config/index.ts";
import { writeTransaction } from "../database/transaction.ts";
import { IndexHost, type SearchIndex, ToolRegistry } from "../discovery/index.ts";
import { EventLog, type EventSink } from "../events/index.ts";
import { Learning, PostgresSearches } from "../learning/index.ts";
import { ReplicatedEvents } from "../replication/events.ts";
import { LocalWriter, type StateWriter } from "../replication/writes.ts";
import {
  type Embedder,
  MeaningMeter,
  type RequestMeaning,
  type SemanticSearch,
  semanticSkillSearch,
  semanticToolSearch,
  toolTexts,
} from "../semantic/index.ts";
import { SkillService } from "../skill-service/index.ts";
import { type LoadProgress, SkillLibrary, type SkillWordIndex } from "../skills/index.ts";
import { syncCatalogFiles } from "../sources/catalog-files.ts";
import type { McpTimeouts } from "../sources/mcp.ts";
import { DEFAULT_CALL_LIMITS } from "../sources/mcp-calls.ts";
import { McpGateway } from "../sources/mcp-gateway.ts";
import { McpSources } from "../sources/mcp-sources.ts";
import { loadConfiguredSkillPacks } from "../sources/skill-packs.ts";
import { ToolSourceRegistry } from "../sources/status.ts";
import { ToolService } from "../tools/service.ts";
import {
  localUsageBook,
  maintainPartitions,
  PostgresLedger,
  PricingTable,
  startPartitionMaintenance,
  startUsageRetention,
  type UsageBook,
  UsageLedger,
} from "../usage/index.ts";
import type { EventExport } from "./event-export.ts";
import type { HealthStatus } from "./health.ts";
import { ServerMetrics } from "./metrics.ts";
import { redactedUrl, type Storage } from "./storage.ts";
import type { ConnectionCounts } from "./transport/connections.ts";

/** Everything the routes serve, built on the storage, with the configured catalogs and packs loaded. */
export interface Domain {
  readonly events: EventLog;
  readonly writer: StateWriter;
  readonly index: IndexHost;
  readonly skills: SkillLibrary;
  /** The usage ledger: in the shared PostgreSQL for replicas, else this server's SQLite. */
  readonly usage: UsageBook;
  readonly tools: ToolService;
  readonly learning: Learning;
  readonly sources: ToolSourceRegistry;
  readonly mcp: McpSources;
  /** What the MCP servers offer besides tools, for the MCP endpoint's sessions. */
  readonly gateway: McpGateway;
  /** What a caller may do with skills: the library with meaning, learning and the caller's tool gate. */
  readonly skillService: SkillService;
  readonly semantic: SemanticSearch<SearchIndex> | undefined;
  readonly semanticSkills: SemanticSearch<SkillWordIndex> | undefined;
  readonly metrics: ServerMetrics | undefined;
  readonly connections: ConnectionCounts;
  /** The keys calls are authenticated with (a replica's: its copy of the fleet's). */
  readonly keys: ApiKeyStore;
  /** The keys as KeyService manages them (a replica's: the fleet's, in the shared database). */
  readonly keyBook: KeyBook;
}

/** How the domain reports and is tuned (part of startServer's options). */
export interface DomainOptions {
  /** Progress of the configured skill packs as they load (the CLI draws a bar). */
  readonly onSkillPackProgress?: (pack: string, progress: LoadProgress) => void;
  /** Connect, request and backoff timings of MCP sources (tests and benches). */
  readonly mcpTimeouts?: Partial<McpTimeouts>;
  /** Every committed event also goes here (OpenTelemetry logs: src/server/event-export.ts). */
  readonly eventExport?: EventExport;
}

/** The model to rank by meaning with, when tool_search.semantic is on (opened before anything else). */
interface Semantics {
  readonly embedder: Embedder;
  /** tool_search.semantic.weight */
  readonly weight: number;
  /** tool_search.semantic.max_wait_ms */
  readonly maxWaitMs: number;
}

/** What buildDomain builds on. */
interface DomainParts {
  readonly config: WayfindConfig;
  readonly storage: Storage;
  readonly semantics: Semantics | undefined;
  readonly health: HealthStatus;
  readonly logger: Logger;
  /** Each part built adds its closer here, as it is built: the server closes them last built first. */
  readonly closers: Closers;
}

/**
 * Builds the domain on `storage` and loads the configured catalog files and skill packs (a replica
 * first catches up with the shared log). A file with errors fails the start (the caller closes what
 * was built: every part added its closer).
 */
export async function buildDomain(parts: DomainParts, options: DomainOptions): Promise<Domain> {
  const { config, storage, semantics, health, logger, closers } = parts;
  const { db, replica } = storage;
  const settings = config.server;
  const connections: ConnectionCounts = { open: 0, refused: 0, shed: 0 };
  // Read when scraped, by then every part exists.
  const metrics = settings.metrics
    ? new ServerMetrics({
        connections: () => connections,
        toolCount: () => registry.size,
        skillCount: () => skills.size,
        eventSubscribers: () => events.subscriberCount,
        learnedRequestsInMemory: () => learning.requestsInMemory,
        eventSubscriberLag: () => events.subscriberLag(),
        mcpSources: () => mcp.statuses(),
        ...(semantics ? { semanticCapacity: () => semantics.embedder.capacity } : {}),
        ...(replica ? { replica } : {}),
      })
    : undefined;
  const reportEventError = (error: unknown) => logger.error({ err: error }, "event log write failed");
  const events = new EventLog(db, {
    maxEvents: settings.eventRetention.maxEvents,
    maxAgeHours: settings.eventRetention.maxAgeHours,
    onError: reportEventError,
    onCommitted: (event) => {
      metrics?.eventCommitted(event);
      options.eventExport?.exportEvent(event);
    },
  });
  closers.add(() => events.close());
  // Replicas store events only through the shared change log, so ids are the same on every replica.
  const replicatedEvents = replica && new ReplicatedEvents(events, db, replica, reportEventError);
  const eventSink: EventSink = replicatedEvents ?? events;
  // The replica leaves after everything that writes through it (its events flushed first).
  closers.add(async () => {
    replicatedEvents?.flush();
    await replica?.close();
  });
  const writer: StateWriter = replica ?? new LocalWriter(db);
  // A replica's key table is its copy of the fleet's, trusted while known to be current.
  const keys = new ApiKeyStore(
    db,
    config.auth.apiKeys,
    replica ? { currentAsOfMs: () => replica.currentAsOfMs } : {},
  );

  const pricing = PricingTable.withDefaults(config.pricing);
  // Replicas keep the ledger in the shared database; this one applies usage changes an older fleet
  // version left in the log (and is the ledger itself without PostgreSQL).
  const usage = new UsageLedger({
    db,
    events: eventSink,
    pricing,
    retentionDays: config.usage.retentionDays,
    // Replicas count retention on the log's clock, so a key is forgotten at the same change everywhere.
    ...(replica ? { retentionClock: () => replica.appliedAtMs } : {}),
  });
  closers.add(
    startUsageRetention(usage, {
      onError: (error) => logger.error({ err: error }, "usage retention failed"),
    }),
  );

  const vectorSync = (what: string) =>
    semantics && {
      db,
      embedder: semantics.embedder,
      weight: semantics.weight,
      maxWaitMs: semantics.maxWaitMs,
      onMeaning: meaningLog(what, semantics.embedder, logger),
      onSynced: (report: object) =>
        logger.info({ ...report, model: semantics.embedder.modelId }, `${what} vectors synced`),
      onSyncError: (error: unknown) => logger.error({ err: error }, `${what} vector sync failed`),
    };
  const toolVectors = vectorSync("tool");
  const skillVectors = vectorSync("skill");
  const semantic = toolVectors && semanticToolSearch(toolVectors);
  const semanticSkills = skillVectors && semanticSkillSearch(skillVectors);
  // A vector sync under way ends when the model closes: the syncs stop, then the model, then both end.
  closers.add(async () => {
    const ended = [semantic?.close(), semanticSkills?.close()];
    await semantics?.embedder.close();
    await Promise.all(ended);
  });
  const activations = new ActivationStore(db, {
    events: eventSink,
    writer,
    runActivationTtlSeconds: config.toolSearch.runActivationTtlSeconds,
    onError: (error) => logger.warn({ err: error }, "a run's idle clock could not be moved"),
  });
  const registry = new ToolRegistry(db, { writer, aliases: config.aliases });
  const learningError = (error: unknown) => logger.warn({ err: error }, "a choice could not be learned from");
  // Replicas share their searches, so a choice reaching another replica than its search still teaches.
  const sharedSearches =
    replica && new PostgresSearches(replica, config.learning.selectionWindowSeconds * 1000, learningError);
  if (sharedSearches) closers.add(() => sharedSearches.close());
  const learning = new Learning({
    db,
    writer,
    events: eventSink,
    config: config.learning,
    ...(semantics ? { embedder: semantics.embedder } : {}),
    ...(sharedSearches ? { shared: sharedSearches } : {}),
    onError: learningError,
  });
  const index = new IndexHost(registry, {
    events: eventSink,
    preferredNamespaces: config.toolSearch.preferredNamespaces,
    synonyms: config.toolSearch.synonyms,
    goodMatchScore: config.toolSearch.goodMatchScore,
    onIndexBuilt: (built) => semantic?.catalogChanged(built, toolTexts(built)),
    ...(semantics ? { modelWords: semantics.embedder.words } : {}),
  });
  const skills = new SkillLibrary({
    db,
    events: eventSink,
    writer,
    onError: (error) => logger.warn({ err: error }, "a skill's use could not be counted"),
    redaction: config.skills.redaction,
    goodMatchScore: config.skills.goodMatchScore,
    synonyms: config.toolSearch.synonyms,
    ...(semantics ? { modelWords: semantics.embedder.words } : {}),
    pinnedSkillNames: config.skillPacks.flatMap((pack) => pack.pinnedSkillNames),
    packRoots: [
      config.configFile ? dirname(config.configFile) : process.cwd(),
      ...config.skillPacks.map((p) => p.path),
    ],
    onSkillsChanged: () => semanticSkills?.catalogChanged(undefined, () => skills.embeddingTexts()),
  });
  const openUsageBook = async (): Promise<UsageBook> => {
    if (replica === undefined) return localUsageBook(usage, writer);
    const { retentionDays } = config.usage;
    const ledger = await PostgresLedger.open({ shared: replica, pricing, retentionDays });
    // Today's partition exists before the first record; later days are made ready ahead of time.
    await maintainPartitions(replica, retentionDays);
    const stopPartitionMaintenance = startPartitionMaintenance(replica, retentionDays, {
      onReport: (report) => {
        if (report.created + report.dropped > 0) logger.info(report, "usage ledger partitions maintained");
      },
      onError: (error) => logger.warn({ err: error }, "usage ledger partition maintenance failed"),
    });
    closers.add(stopPartitionMaintenance);
    return ledger;
  };
  // Before anything writes: the copy catches up with the log, then follows it.
  await replica?.follow([
    ...(replicatedEvents ? [replicatedEvents.write] : []),
    usage.recordWrite,
    ...activations.writes,
    registry.registerWrite,
    ...skills.writes,
    ...learning.store.writes,
    keys.copyWrite,
  ]);
  await sharedSearches?.migrate();
  await syncCatalogFiles(registry, config.catalogs, logger, config.configFile);
  await loadConfiguredSkillPacks(skills, config.skillPacks, logger, options.onSkillPackProgress);
  const usageBook = await openUsageBook();
  const keyRecords = replica
    ? await SharedKeyRecords.open(replica, redactedUrl(config.storage.postgres?.url ?? ""))
    : new LocalKeyRecords(db, () => keys.changed());
  // Skills already in the database (from earlier starts) get vectors too, not only changed ones.
  semanticSkills?.catalogChanged(undefined, () => skills.embeddingTexts());

  const mcp = new McpSources({
    configs: config.mcpServers,
    registry,
    logger,
    timeouts: options.mcpTimeouts,
    onHealthChange: (status) =>
      health.set(
        sourceHealthName(status.id),
        status.healthy ? ServingStatus.SERVING : ServingStatus.NOT_SERVING,
      ),
    // Replicas share the MCP servers: each is synced by whichever replica holds its lease.
    lease: replica && ((name, handlers) => replica.lease(name, handlers)),
    // A result must fit in an answer, with room for the rest of the message.
    callLimits: {
      ...DEFAULT_CALL_LIMITS,
      maxResultBytes: Math.max(settings.maxMessageBytes / 2, settings.maxMessageBytes - 64 * 1024),
    },
  });
  closers.add(() => mcp.close());
  const sources = new ToolSourceRegistry(registry, mcp);
  sources.catalogFilesLoaded(config.catalogs);
  const access = createAccessControl(config);
  const filtered = access.policyFilteredCount(registry.all());
  // Written at once (not batched): the one record of what this start's policy removed.
  writeTransaction(db, () =>
    eventSink.emit({
      type: "tool_policy_filtered",
      attributes: { removed_count: filtered, registry_count: registry.size - filtered },
    }),
  );
  const tools = new ToolService({
    registry,
    index,
    access,
    activations,
    lazyGroups: compileLazyGroups(config.lazyToolGroups),
    toolSearch: config.toolSearch,
    events: eventSink,
    semantic,
    learning,
    executor: mcp,
  });
  const skillService = new SkillService({
    library: skills,
    toolGateFor: (caller) => tools.toolGate(caller),
    semantic: semanticSkills,
    learning,
  });
  return {
    events,
    writer,
    index,
    skills,
    skillService,
    usage: usageBook,
    tools,
    learning,
    sources,
    mcp,
    gateway: new McpGateway(mcp, access, logger),
    semantic,
    semanticSkills,
    metrics,
    connections,
    keys,
    keyBook: new KeyBook(keyRecords, config.auth.apiKeys, config.auth.keyRetentionDays),
  };
}

/** Health service name of a tool source: each MCP server is one (`wayfind.source.mcp:<name>`). */
/**
 * Says in the log when the model reads less than half of a catalog's searches over a window (the
 * static tier or words read the rest), and when it is back: meaning degrading under load is visible
 * without a line per search.
 */
function meaningLog(what: string, embedder: Embedder, logger: Logger): (meaning: RequestMeaning) => void {
  const meter = new MeaningMeter({
    onChange: (state, shares) => {
      const figures = {
        searches: shares.searches,
        modelShare: Number(shares.model.toFixed(3)),
        staticShare: Number(shares.static.toFixed(3)),
        wordsShare: Number(shares.none.toFixed(3)),
        capacityTextsPerSecond: Math.round(embedder.capacity),
      };
      if (state === "low")
        logger.warn(
          figures,
          `the model read under half of the ${what} searches of the last seconds: more callers than it can ` +
            "read at once; the static tier (or words, without one) read the rest",
        );
      else logger.info(figures, `the model reads the ${what} searches again`);
    },
  });
  return (meaning) => meter.record(meaning.tier);
}

export function sourceHealthName(sourceId: string): string {
  return `wayfind.source.${sourceId}`;
}
