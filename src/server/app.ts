import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createSecureContext } from "node:tls";
import type { DescService } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.ts";
import { ServerReflection as ServerReflectionV1 } from "../../gen/ts/grpc/reflection/v1/reflection_pb.ts";
import { ServerReflection as ServerReflectionV1Alpha } from "../../gen/ts/grpc/reflection/v1alpha/reflection_pb.ts";
import { SkillService as SkillServiceDesc } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { createAccessControl } from "../access/index.ts";
import { ActivationStore, compileLazyGroups } from "../activation/index.ts";
import { ApiKeyStore, Authenticator, PrincipalLimits, unauthenticatedAllowed } from "../auth/index.ts";
import { ConfigError, missingSourceFiles, type TlsConfig, type WayfindConfig } from "../config/index.ts";
import { WalCheckpointer } from "../database/checkpointer.ts";
import { CACHE_KIB, type Db, openDatabase, setCacheSize } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { IndexHost, ToolRegistry } from "../discovery/index.ts";
import { errorReason, WayfindError } from "../errors.ts";
import { EventLog, type EventSink } from "../events/index.ts";
import { ReplicatedEvents } from "../replication/events.ts";
import { CopyBehindLog } from "../replication/follower.ts";
import { Replica } from "../replication/replica.ts";
import { LocalWriter, type StateWriter } from "../replication/writes.ts";
import { Embedder, SemanticSkillSearch, SemanticToolSearch } from "../semantic/index.ts";
import { type LoadProgress, SkillLibrary } from "../skills/index.ts";
import { syncCatalogFiles } from "../sources/catalog-files.ts";
import { type McpTimeouts, mcpSourceId } from "../sources/mcp.ts";
import { McpSources } from "../sources/mcp-sources.ts";
import { loadConfiguredSkillPacks } from "../sources/skill-packs.ts";
import { ToolSourceRegistry } from "../sources/status.ts";
import { ToolService } from "../tools/service.ts";
import { PricingTable, startUsageRetention, UsageLedger } from "../usage/index.ts";
import type { ConnectionCounts } from "./connections.ts";
import { lockDataFolder } from "./data-lock.ts";
import type { EventExport } from "./event-export.ts";
import { HealthStatus } from "./health.ts";
import { healthEndpoints } from "./http-health.ts";
import { collectGarbage } from "./memory.ts";
import { ServerMetrics } from "./metrics.ts";
import { allMigrations } from "./migrations.ts";
import { withCallPipeline } from "./pipeline.ts";
import { reflectionRoutes } from "./reflection.ts";
import { serviceRoutes } from "./rpc.ts";
import { skillService } from "./services/skills.ts";
import { toolDiscoveryService } from "./services/tools.ts";
import { usageService } from "./services/usage.ts";
import { traceRoutes } from "./tracing.ts";
import { checkPortFree, startTransport, type TlsCredentials } from "./transport.ts";

export interface StartOptions {
  /** How long in-flight calls may run on shutdown before they are cut (default 10 s). */
  readonly drainGraceMs?: number;
  /** Progress of the configured skill packs as they load (the CLI draws a bar). */
  readonly onSkillPackProgress?: (pack: string, progress: LoadProgress) => void;
  /**
   * How long the start waits for the first sync of the configured MCP servers (all in parallel)
   * before it listens anyway (default 5 s). Servers still connecting keep syncing in the background;
   * until then their last persisted catalog is served.
   */
  readonly mcpStartupWaitMs?: number;
  /** Connect, request and backoff timings of MCP sources (tests and benches). */
  readonly mcpTimeouts?: Partial<McpTimeouts>;
  /**
   * Full garbage collections before listening, so the garbage of indexing the catalogs does not stay
   * resident until V8's memory reducer gets to it (10,000 tools: ~70 MB). For a process that serves
   * (the CLI); costs a few hundred ms at start.
   */
  readonly compactHeapBeforeListening?: boolean;
  /** A span per call (tracing started by the caller: src/server/tracing.ts); default off. */
  readonly traceCalls?: boolean;
  /** Every committed event also goes here (OpenTelemetry logs: src/server/event-export.ts). */
  readonly eventExport?: EventExport;
}

export interface RunningServer {
  readonly port: number;
  /**
   * Reads the TLS certificate and key files again (SIGHUP): new connections use them, open ones are
   * not dropped. Throws, keeping the old ones, when they do not load or the server has no TLS.
   */
  reloadTls(): void;
  readonly db: Db;
  readonly events: EventLog;
  readonly mcp: McpSources;
  /** Set when the state is shared on PostgreSQL (storage.postgres): this server is one replica. */
  readonly replica: Replica | undefined;
  /** Drains in-flight calls, ends watch streams, closes the database. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_MCP_STARTUP_WAIT_MS = 5_000;
/** Health service of a replica's writes: NOT_SERVING while the shared database is away. */
const WRITES_HEALTH_NAME = "wayfind.writes";
const WAYFIND_SERVICES: readonly DescService[] = [ToolDiscoveryService, SkillServiceDesc, UsageService];

export async function startServer(
  config: WayfindConfig,
  logger: Logger,
  options: StartOptions = {},
): Promise<RunningServer> {
  const settings = config.server;
  // Before anything is loaded or created: a port in use, a missing or malformed model folder, or a
  // data folder another server holds fails the start, saying which.
  const missing = missingSourceFiles(config);
  if (missing.length > 0) throw new ConfigError(missing);
  const allowUnauthenticated = unauthenticatedAllowed(config);
  const tlsFiles = tlsFilesOf(config);
  const tlsCredentials = tlsFiles ? readTlsCredentials(tlsFiles) : undefined;
  await checkPortFree(settings.host, settings.port);
  const semanticConfig = config.toolSearch.semantic.enabled ? config.toolSearch.semantic : undefined;
  const embedder = semanticConfig ? await Embedder.open(semanticConfig.modelDir) : undefined;
  let releaseDataFolder: () => void;
  let db: Db;
  const dataFile = join(settings.dataDir, "wayfind.db");
  const replicaId = randomUUID();
  try {
    releaseDataFolder = lockDataFolder(settings.dataDir);
    try {
      await prepareReplicaCopy(config, dataFile, replicaId, logger);
      db = openDatabase(dataFile, allMigrations);
    } catch (error) {
      releaseDataFolder();
      throw error;
    }
  } catch (error) {
    await embedder?.close();
    throw error;
  }
  setCacheSize(db, CACHE_KIB.starting);
  const checkpointer = new WalCheckpointer(db, dataFile, {
    onError: (message) => logger.warn({ error: message }, "WAL checkpoint failed"),
  });
  let replica: Replica | undefined;
  // Set once the routes exist; a replica's reachability changes before that are read from it then.
  let health: HealthStatus | undefined;
  try {
    replica = await connectReplica(config, db, replicaId, logger, (reachable) => {
      // Reads go on from the local copy; writes fail until the database is back.
      health?.set(WRITES_HEALTH_NAME, reachable ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
    });
  } catch (error) {
    await checkpointer.close();
    db.close();
    releaseDataFolder();
    await embedder?.close();
    throw error;
  }
  const shutdown = new AbortController();
  const connections: ConnectionCounts = { open: 0, refused: 0, shed: 0 };
  // Read when scraped, by then every part exists.
  const metrics = settings.metrics
    ? new ServerMetrics({
        connections: () => connections,
        toolCount: () => registry.size,
        skillCount: () => skills.size,
        eventSubscribers: () => events.subscriberCount,
        eventSubscriberLag: () => events.subscriberLag(),
        mcpSources: () => mcp.statuses(),
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
  // Replicas store events only through the shared change log, so ids are the same on every replica.
  const replicatedEvents = replica && new ReplicatedEvents(events, db, replica, reportEventError);
  const eventSink: EventSink = replicatedEvents ?? events;
  const writer: StateWriter = replica ?? new LocalWriter(db);

  const usage = new UsageLedger({
    db,
    events: eventSink,
    pricing: PricingTable.withDefaults(config.pricing),
    retentionDays: config.usage.retentionDays,
    // Replicas count retention on the log's clock, so a key is forgotten at the same change everywhere.
    ...(replica ? { retentionClock: () => replica.appliedAtMs } : {}),
  });
  const stopUsageRetention = startUsageRetention(usage, {
    onError: (error) => logger.error({ err: error }, "usage retention failed"),
  });

  const semantic =
    embedder && semanticConfig
      ? new SemanticToolSearch({
          db,
          embedder,
          weight: semanticConfig.weight,
          onSynced: (report) => logger.info({ ...report, model: embedder.modelId }, "tool vectors synced"),
          onSyncError: (error) => logger.error({ err: error }, "tool vector sync failed"),
        })
      : undefined;
  const semanticSkills =
    embedder && semanticConfig
      ? new SemanticSkillSearch({
          db,
          embedder,
          weight: semanticConfig.weight,
          onSynced: (report) => logger.info({ ...report, model: embedder.modelId }, "skill vectors synced"),
          onSyncError: (error) => logger.error({ err: error }, "skill vector sync failed"),
        })
      : undefined;
  const activations = new ActivationStore(db, {
    events: eventSink,
    writer,
    runActivationTtlSeconds: config.toolSearch.runActivationTtlSeconds,
    onError: (error) => logger.warn({ err: error }, "a run's idle clock could not be moved"),
  });
  const stopReplica = async () => {
    replicatedEvents?.flush();
    await replica?.close();
  };
  const closeSemantic = async () => {
    const ended = [semantic?.close(), semanticSkills?.close()];
    await embedder?.close();
    await Promise.all(ended);
  };
  const registry = new ToolRegistry(db, { writer, aliases: config.aliases });
  const index = new IndexHost(registry, {
    events: eventSink,
    preferredNamespaces: config.toolSearch.preferredNamespaces,
    synonyms: config.toolSearch.synonyms,
    onIndexBuilt: (built) => semantic?.indexBuilt(built),
  });
  const closeStorage = async () => {
    stopUsageRetention();
    events.close();
    // The worker's own connection closes after ours: the last to close checkpoints the log.
    const workerClosed = checkpointer.close();
    db.close();
    // Only then is the folder free: stop() resolving means no file in it is still being written.
    await workerClosed;
    releaseDataFolder();
  };
  const skills = new SkillLibrary({
    db,
    events: eventSink,
    writer,
    onError: (error) => logger.warn({ err: error }, "a skill's use could not be counted"),
    redaction: config.skills.redaction,
    goodMatchScore: config.skills.goodMatchScore,
    pinnedSkillNames: config.skillPacks.flatMap((pack) => pack.pinnedSkillNames),
    packRoots: [
      config.configFile ? dirname(config.configFile) : process.cwd(),
      ...config.skillPacks.map((p) => p.path),
    ],
    onSkillsChanged: () => semanticSkills?.skillsChanged(() => skills.embeddingTexts()),
  });
  // A catalog file or skill pack with errors fails the start; nothing stays open behind it.
  try {
    // Before anything writes: the copy catches up with the log, then follows it.
    await replica?.follow([
      ...(replicatedEvents ? [replicatedEvents.write] : []),
      usage.recordWrite,
      ...activations.writes,
      registry.registerWrite,
      ...skills.writes,
    ]);
    await syncCatalogFiles(registry, config.catalogs, logger);
    await loadConfiguredSkillPacks(skills, config.skillPacks, logger, options.onSkillPackProgress);
  } catch (error) {
    await stopReplica();
    await closeSemantic();
    await closeStorage();
    throw error;
  }
  // Skills already in the database (from earlier starts) get vectors too, not only changed ones.
  semanticSkills?.skillsChanged(() => skills.embeddingTexts());
  health = new HealthStatus([...WAYFIND_SERVICES.map((service) => service.typeName), WRITES_HEALTH_NAME]);
  // Each MCP server is a health "service" of its own (`wayfind.source.mcp:<name>`), NOT_SERVING
  // until its first sync and whenever it is down, so probes see which source is unhealthy.
  for (const server of config.mcpServers)
    health.set(sourceHealthName(mcpSourceId(server.name)), ServingStatus.NOT_SERVING);
  const mcp = new McpSources(
    config.mcpServers,
    registry,
    logger,
    options.mcpTimeouts,
    (status) =>
      health?.set(
        sourceHealthName(status.id),
        status.healthy ? ServingStatus.SERVING : ServingStatus.NOT_SERVING,
      ),
    // Replicas share the MCP servers: each is synced by whichever replica holds its lease.
    replica && ((name, handlers) => replica.lease(name, handlers)),
  );
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
  });

  const reflected = [...WAYFIND_SERVICES, Health, ServerReflectionV1, ServerReflectionV1Alpha];

  const auth = {
    authenticator: new Authenticator(
      config.auth,
      new ApiKeyStore(db, config.auth.apiKeys),
      allowUnauthenticated,
    ),
    limits: new PrincipalLimits(config.auth.limits),
    onDenied: (method: string, code: string) => metrics?.callDenied(method, code),
  };
  if (!allowUnauthenticated)
    logger.info({ host: settings.host }, "calls need credentials (auth); none are served without");
  const pipelined = withCallPipeline(
    [
      ...serviceRoutes(ToolDiscoveryService, toolDiscoveryService(tools, events, sources)),
      ...serviceRoutes(
        SkillServiceDesc,
        skillService(skills, events, (caller) => tools.toolGate(caller), semanticSkills),
      ),
      ...serviceRoutes(UsageService, usageService(usage, writer, events)),
    ],
    logger,
    { auth, ...(replica ? { fence: () => replica.fence() } : {}) },
  );
  const wayfindRoutes = options.traceCalls ? traceRoutes(pipelined) : pipelined;
  const routes = [
    ...(metrics ? metrics.observe(wayfindRoutes) : wayfindRoutes),
    ...withCallPipeline([...health.routes(), ...reflectionRoutes(reflected)], logger, { level: "debug" }),
  ];
  const probes = healthEndpoints(() => {
    const vectors = semantic?.progress() ?? { status: "off", pending: 0 };
    return {
      index: index.indexCurrent ? "ok" : "building",
      database: databaseReachable(db) ? "ok" : "unreachable",
      writes: replica?.reachable === false ? "unavailable" : "ok",
      draining: shutdown.signal.aborted ? "yes" : "no",
      semantic: vectors.status,
      semanticPending: vectors.pending,
    };
  });
  const scrape = metrics?.endpoint();

  let transport: Awaited<ReturnType<typeof startTransport>>;
  try {
    // Last before listening, so nothing that can still fail the start leaves MCP children behind.
    await mcp.start(options.mcpStartupWaitMs ?? DEFAULT_MCP_STARTUP_WAIT_MS);
    // Builds the search index now (any read does) rather than in the first caller's call.
    index.list({ pageSize: 1 });
    setCacheSize(db, CACHE_KIB.serving);
    if (options.compactHeapBeforeListening) collectGarbage();
    transport = await startTransport({
      host: settings.host,
      port: settings.port,
      routes,
      maxMessageBytes: settings.maxMessageBytes,
      shutdownSignal: shutdown.signal,
      limits: {
        handshakeTimeoutMs: secondsToMs(settings.handshakeTimeoutSeconds),
        requestHeaderTimeoutMs: secondsToMs(settings.requestHeaderTimeoutSeconds),
        requestBodyTimeoutMs: secondsToMs(settings.requestBodyTimeoutSeconds),
        idleTimeoutMs: secondsToMs(settings.idleTimeoutSeconds),
        maxConnections: settings.maxConnections,
      },
      logger,
      tls: tlsCredentials,
      counts: connections,
      httpEndpoints: (request, response) =>
        probes(request, response) || (scrape?.(request, response) ?? false),
    });
  } catch (error) {
    await mcp.close();
    await stopReplica();
    await closeSemantic();
    await closeStorage();
    throw error;
  }
  logger.info(
    { host: settings.host, port: transport.port, dataDir: settings.dataDir, tls: tlsFiles !== undefined },
    "listening",
  );

  let stopping: Promise<void> | undefined;
  return {
    port: transport.port,
    db,
    events,
    mcp,
    replica,
    reloadTls() {
      if (!tlsFiles) throw new Error("the server was started without TLS (server.tls); nothing to reload");
      transport.reloadTls(readTlsCredentials(tlsFiles));
      logger.info({ cert: tlsFiles.certFile }, "TLS certificate reloaded");
    },
    stop() {
      stopping ??= (async () => {
        logger.info("draining");
        health.setAll(ServingStatus.NOT_SERVING);
        shutdown.abort();
        await transport.close(options.drainGraceMs ?? 10_000);
        await mcp.close();
        await stopReplica();
        await closeSemantic();
        await closeStorage();
        logger.info("stopped");
      })();
      return stopping;
    },
  };
}

/**
 * With storage.postgres, this server is one replica of a fleet sharing that database: every write
 * (tools, skill packs, activations, usage, events) goes through its change log and every replica
 * applies it to its own SQLite copy (docs/replicas.md).
 */
async function connectReplica(
  config: WayfindConfig,
  db: Db,
  id: string,
  logger: Logger,
  onReachability: (reachable: boolean) => void,
): Promise<Replica | undefined> {
  const postgres = config.storage.postgres;
  if (postgres === undefined) return undefined;
  const where = redactedUrl(postgres.url);
  let away = false;
  let replica: Replica;
  try {
    replica = await Replica.connect({
      postgres,
      id,
      db,
      holdsStandaloneState: () => holdsStandaloneState(db),
      // Once degraded mode is logged, each retry's failure is detail; a copy behind the log needs an operator.
      onError: (error) =>
        logger[error instanceof CopyBehindLog ? "error" : away ? "debug" : "warn"](
          { err: error, database: where },
          "shared database call failed",
        ),
      onReachability: (reachable) => {
        away = !reachable;
        if (reachable) logger.info({ database: where }, "shared database is back; writes are served again");
        else
          logger.warn(
            { database: where },
            "shared database unreachable: writes fail (UNAVAILABLE), reads are served from this replica's copy, marked wayfind-stale",
          );
        onReachability(reachable);
      },
      onCompacted: (report) => logger.info({ ...report, database: where }, "shared change log compacted"),
    });
  } catch (error) {
    throw sharedDatabaseError(error, where, "connecting to");
  }
  logger.info(
    { database: where, replica: replica.id },
    "replica of a shared database: tools, skills, activations, usage and events are shared",
  );
  return replica;
}

/**
 * With storage.postgres, before the copy is opened: a new replica starts from the newest snapshot of
 * the shared state, and one whose copy fell behind the compacted log gets it replaced.
 */
async function prepareReplicaCopy(config: WayfindConfig, file: string, replicaId: string, logger: Logger) {
  const postgres = config.storage.postgres;
  if (postgres === undefined) return;
  const where = redactedUrl(postgres.url);
  let restored: number | undefined;
  try {
    restored = await Replica.prepareCopy(postgres, {
      file,
      replicaId,
      holdsStandaloneState,
      onError: (error) => logger.warn({ err: error, database: where }, "shared database call failed"),
    });
  } catch (error) {
    throw sharedDatabaseError(error, where, "preparing this replica's copy from");
  }
  if (restored !== undefined)
    logger.info({ database: where, seq: restored }, "replica copy restored from the shared snapshot");
}

/** A copy holding events or usage a server recorded without PostgreSQL: it can never be a replica's. */
function holdsStandaloneState(db: Db): boolean {
  return db.prepare("SELECT 1 FROM events UNION ALL SELECT 1 FROM usage_records LIMIT 1").get() !== undefined;
}

/** A start that failed on the shared database, saying what was being done and what to check. */
function sharedDatabaseError(error: unknown, where: string, doing: string): ConfigError {
  if (error instanceof WayfindError) return new ConfigError([`storage.postgres: ${error.message}`]);
  return new ConfigError([
    `storage.postgres: ${doing} ${where} failed (${errorReason(error)}); check the URL, that the server runs and accepts this user`,
  ]);
}

/** The URL without its password, for logs and errors. */
function redactedUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

/** The PEM files TLS reads: server.tls, with the client CA from it or from auth.mtls. */
function tlsFilesOf(config: WayfindConfig): TlsConfig | undefined {
  const { tls } = config.server;
  const mtls = config.auth.mtls;
  if (!tls) {
    if (mtls)
      throw new ConfigError([
        "auth.mtls needs TLS: set server.tls (cert_file, key_file) or --tls-cert and --tls-key",
      ]);
    return undefined;
  }
  const clientCaFile = mtls?.clientCa ?? tls.clientCaFile;
  if (mtls && clientCaFile === undefined)
    throw new ConfigError([
      "auth.mtls needs the CA that signs client certificates: set auth.mtls.client_ca or server.tls.client_ca_file",
    ]);
  return { ...tls, clientCaFile };
}

/** The PEM files' contents, checked to load together (a key that does not match fails here, saying so). */
function readTlsCredentials(files: TlsConfig): TlsCredentials {
  const credentials = {
    cert: readFileSync(files.certFile),
    key: readFileSync(files.keyFile),
    clientCa: files.clientCaFile === undefined ? undefined : readFileSync(files.clientCaFile),
  };
  try {
    createSecureContext({ cert: credentials.cert, key: credentials.key, ca: credentials.clientCa });
  } catch (error) {
    throw new ConfigError([
      `server.tls: ${files.certFile} and ${files.keyFile} do not load as a certificate chain and its key (${errorReason(error)}); check both files`,
    ]);
  }
  return credentials;
}

/** A trivial query answers: the database file is open and readable. */
function databaseReachable(db: Db): boolean {
  try {
    db.prepare("SELECT 1").get();
    return true;
  } catch {
    return false;
  }
}

/** Whole milliseconds (node's HTTP timeouts take integers), at least 1. */
function secondsToMs(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1000));
}

/** Health service name of a tool source. */
function sourceHealthName(sourceId: string): string {
  return `wayfind.source.${sourceId}`;
}
