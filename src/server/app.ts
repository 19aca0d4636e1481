import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import type { DescService } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.ts";
import { ServerReflection as ServerReflectionV1 } from "../../gen/ts/grpc/reflection/v1/reflection_pb.ts";
import { ServerReflection as ServerReflectionV1Alpha } from "../../gen/ts/grpc/reflection/v1alpha/reflection_pb.ts";
import { KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { SkillService as SkillServiceDesc } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import {
  Authenticator,
  admitMcpRequest,
  CredentialWatch,
  isLoopback,
  KeyAdmin,
  PrincipalLimits,
  unauthenticatedAllowed,
} from "../auth/index.ts";
import { ANONYMOUS_CALLER } from "../caller/caller.ts";
import { checkoutPath, wayfindVersion } from "../checkout.ts";
import { Closers } from "../closers.ts";
import { ConfigError, missingSourceFiles, type TlsConfig, type WayfindConfig } from "../config/index.ts";
import { CACHE_KIB, type Db, setCacheSize } from "../database/sqlite.ts";
import { errorReason } from "../errors.ts";
import type { EventLog } from "../events/index.ts";
import { McpEndpoint, type McpPeers } from "../mcp-endpoint/index.ts";
import type { Replica } from "../replication/replica.ts";
import { Embedder } from "../semantic/index.ts";
import { mcpSourceId } from "../sources/mcp.ts";
import type { McpSources } from "../sources/mcp-sources.ts";
import { ConsoleFiles } from "./console-files.ts";
import { buildDomain, type Domain, type DomainOptions, sourceHealthName } from "./domain.ts";
import { HealthStatus } from "./health.ts";
import { healthEndpoints } from "./http-health.ts";
import { inProcessTransport } from "./in-process.ts";
import { McpWorkerPeers, type WorkerSockets } from "./mcp-peers.ts";
import { collectGarbage } from "./memory.ts";
import { credentialsBeforeBody, withCallPipeline } from "./pipeline.ts";
import { reflectionRoutes } from "./reflection.ts";
import { keyService } from "./services/keys.ts";
import { skillService } from "./services/skills.ts";
import { toolDiscoveryService } from "./services/tools.ts";
import { usageService } from "./services/usage.ts";
import { openStorage, type Storage } from "./storage.ts";
import { idsAfter, type TenantLookups } from "./tenant-directory.ts";
import { traceRoutes } from "./tracing.ts";
import type { ConnectionLimits } from "./transport/connections.ts";
import { type MethodRoute, serviceRoutes } from "./transport/rpc.ts";
import {
  checkPortFree,
  type HttpEndpoints,
  type RunningTransport,
  startTransport,
  type TlsCredentials,
} from "./transport/transport.ts";

export interface StartOptions extends DomainOptions {
  /** How long in-flight calls may run on shutdown before they are cut (default 10 s). */
  readonly drainGraceMs?: number;
  /**
   * How long the start waits for the first sync of the configured MCP servers (all in parallel)
   * before it listens anyway (default 5 s). Servers still connecting keep syncing in the background;
   * until then their last persisted catalog is served.
   */
  readonly mcpStartupWaitMs?: number;
  /**
   * Full garbage collections before listening, so the garbage of indexing the catalogs does not stay
   * resident until V8's memory reducer gets to it. For a process that serves (the CLI); the
   * collections take a moment at start.
   */
  readonly compactHeapBeforeListening?: boolean;
  /** A span per call (tracing started by the caller: src/server/tracing.ts); default off. */
  readonly traceCalls?: boolean;
  /**
   * What `GET /metrics` answers, given this server's own registry (a worker of `serve --workers`:
   * every worker's summed, src/cli/workers.ts); default the server's own metrics.
   */
  readonly metricsScrape?: (own: Registry) => () => Promise<string>;
  /** Set in a worker of `serve --workers`: where the workers reach each other's MCP sessions. */
  readonly workerSockets?: WorkerSockets;
}

/** What a started server holds, whether it listens on a port or serves in process. */
interface ServerState {
  readonly db: Db;
  readonly events: EventLog;
  readonly mcp: McpSources;
  /** Set when the state is shared on PostgreSQL (storage.postgres): this server is one replica. */
  readonly replica: Replica | undefined;
}

export interface RunningServer extends ServerState {
  readonly port: number;
  /**
   * Reads the TLS certificate and key files again (SIGHUP): new connections use them, open ones are
   * not dropped. Throws, keeping the old ones, when they do not load or the server has no TLS.
   */
  reloadTls(): void;
  /** Drains in-flight calls, ends watch streams, closes the database. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_MCP_STARTUP_WAIT_MS = 5_000;
/** Health service of a replica's writes: NOT_SERVING while the shared database is away. */
const WRITES_HEALTH_NAME = "wayfind.writes";
const WAYFIND_SERVICES: readonly DescService[] = [
  ToolDiscoveryService,
  SkillServiceDesc,
  UsageService,
  KeyService,
];

export async function startServer(
  config: WayfindConfig,
  logger: Logger,
  options: StartOptions = {},
): Promise<RunningServer> {
  // Before anything is loaded or created: a port in use, a missing or malformed model folder, or a
  // data folder another server holds fails the start, saying which.
  const missing = missingSourceFiles(config);
  if (missing.length > 0) throw new ConfigError(missing);
  const tlsFiles = tlsFilesOf(config);
  const tlsCredentials = tlsFiles ? readTlsCredentials(tlsFiles) : undefined;
  await checkPortFree(config.server.host, config.server.port);
  const closers = new Closers();
  const serving = await openServing(config, logger, options, closers);
  const { storage, domain, health, auth, routes, shutdown } = serving;
  const fence = storage.replica && (() => (storage.replica as Replica).fence());
  const listening = await closers.opening(async () => {
    // The transport drains after the MCP endpoint and its worker peers (added below) have closed
    // their sessions: a session's open stream would otherwise hold the drain to its grace.
    let transport: RunningTransport | undefined;
    closers.add(() => transport?.close(options.drainGraceMs ?? 10_000));
    const mcpPeers =
      config.server.mcp.enabled && options.workerSockets
        ? new McpWorkerPeers(options.workerSockets)
        : undefined;
    const mcpEndpoint = config.server.mcp.enabled
      ? mcpEndpointOn(routes, auth, domain, config, logger, fence, mcpPeers)
      : undefined;
    if (mcpEndpoint) closers.add(() => mcpEndpoint.close());
    if (mcpPeers) closers.add(() => mcpPeers.close());
    const httpEndpoints = plainHttpEndpoints(storage, domain, shutdown.signal, options.metricsScrape, {
      console: config.server.console ? new ConsoleFiles(checkoutPath("dist/console")) : undefined,
      mcp: mcpEndpoint,
    });
    // Last before listening, so nothing that can still fail the start leaves MCP children behind.
    await startServing(serving, options);
    if (options.compactHeapBeforeListening) collectGarbage();
    if (mcpPeers && mcpEndpoint)
      await mcpPeers.listen((request, response) => mcpEndpoint.handles(request, response));
    transport = await startTransport({
      host: config.server.host,
      port: config.server.port,
      routes,
      maxMessageBytes: config.server.maxMessageBytes,
      shutdownSignal: shutdown.signal,
      limits: connectionLimits(config),
      logger,
      tls: tlsCredentials,
      counts: domain.connections,
      httpEndpoints,
      hosts: {
        loopback: isLoopback(config.server.host),
        servesUnauthenticated: unauthenticatedAllowed(config),
        allowedHosts: config.server.allowedHosts,
      },
      cors: config.server.cors,
      credentials: credentialsBeforeBody(auth, logger, fence),
    });
    return transport;
  });
  logger.info(
    {
      host: config.server.host,
      port: listening.port,
      dataDir: config.server.dataDir,
      tls: tlsFiles !== undefined,
      console: config.server.console
        ? consoleUrl(config.server.host, listening.port, tlsFiles !== undefined)
        : "off",
    },
    "listening",
  );

  let stopping: Promise<void> | undefined;
  return {
    port: listening.port,
    ...stateOf(serving),
    reloadTls() {
      if (!tlsFiles) throw new Error("the server was started without TLS (server.tls); nothing to reload");
      listening.reloadTls(readTlsCredentials(tlsFiles));
      logger.info({ cert: tlsFiles.certFile }, "TLS certificate reloaded");
    },
    stop() {
      stopping ??= (async () => {
        logger.info("draining");
        health.setAll(ServingStatus.NOT_SERVING);
        shutdown.abort();
        await closers.close();
        logger.info("stopped");
      })();
      return stopping;
    },
  };
}

/** A server without a port: its RPC routes, served by whoever calls them in this process. */
export interface InProcessServer extends ServerState {
  /**
   * Exactly what a port serves, call pipeline included (credentials from the request headers, roles,
   * caller binding, limits, logs; metrics and traces when configured); not the transport's own checks
   * (Host, CORS, body deadline, credentials before the body, client certificates).
   */
  readonly routes: readonly MethodRoute[];
  /** Aborted on stop, as a port's shutdown signal is: open streams end. */
  readonly shutdownSignal: AbortSignal;
  /** Ends streams, closes the database. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The server startServer starts (same config, storage, domain, sources and routes) without listening:
 * for tests of what the handlers do, which need no port (test/support/server.ts serves the routes
 * through connect's router transport). Without a transport there is no TLS, MCP endpoint, console,
 * probes or metrics endpoint.
 */
export async function startInProcess(
  config: WayfindConfig,
  logger: Logger,
  options: DomainOptions & Pick<StartOptions, "mcpStartupWaitMs" | "traceCalls"> = {},
): Promise<InProcessServer> {
  const missing = missingSourceFiles(config);
  if (missing.length > 0) throw new ConfigError(missing);
  const closers = new Closers();
  const serving = await openServing(config, logger, options, closers);
  const { health, shutdown } = serving;
  await closers.opening(() => startServing(serving, options));
  let stopping: Promise<void> | undefined;
  return {
    routes: serving.routes,
    shutdownSignal: shutdown.signal,
    ...stateOf(serving),
    stop() {
      stopping ??= (async () => {
        health.setAll(ServingStatus.NOT_SERVING);
        shutdown.abort();
        await closers.close();
      })();
      return stopping;
    },
  };
}

/** What serves the RPCs whatever carries them: storage, domain, health, auth and the routes. */
interface Serving {
  readonly storage: Storage;
  readonly domain: Domain;
  readonly health: HealthStatus;
  readonly auth: ReturnType<typeof callAuth>;
  readonly routes: MethodRoute[];
  readonly shutdown: AbortController;
}

/**
 * Opens the model, storage and domain and builds the routes, each part adding its closer to
 * `closers`; closes what it opened if a step fails.
 */
async function openServing(
  config: WayfindConfig,
  logger: Logger,
  options: StartOptions,
  closers: Closers,
): Promise<Serving> {
  const semantic = config.toolSearch.semantic;
  const semantics = semantic.enabled
    ? {
        embedder: await Embedder.open(semantic.modelDir, { threads: semantic.threads }),
        weight: semantic.weight,
        maxWaitMs: semantic.maxWaitMs,
      }
    : undefined;

  const health = new HealthStatus([
    ...WAYFIND_SERVICES.map((service) => service.typeName),
    WRITES_HEALTH_NAME,
  ]);
  // Each MCP server is a health "service" of its own, NOT_SERVING until its first sync and whenever
  // it is down, so probes see which source is unhealthy.
  for (const server of config.mcpServers)
    health.set(sourceHealthName(mcpSourceId(server.name)), ServingStatus.NOT_SERVING);
  if (semantics) closers.add(() => semantics.embedder.close());
  return closers.opening(async () => {
    // A replica's reads go on from the local copy while the shared database is away; writes fail.
    const storage = await openStorage(config, logger, (reachable) =>
      health.set(WRITES_HEALTH_NAME, reachable ? ServingStatus.SERVING : ServingStatus.NOT_SERVING),
    );
    closers.add(() => storage.close());
    const domain = await buildDomain({ config, storage, semantics, health, logger, closers }, options);
    const auth = callAuth(config, domain, logger);
    closers.add(() => auth.credentials.close());
    const tenants = tenantLookups(config, domain);
    const routes = buildRoutes(storage, domain, health, auth, tenants, logger, options);
    return { storage, domain, health, auth, routes, shutdown: new AbortController() };
  });
}

/** The state a started server gives its caller, listening or in process. */
function stateOf({ storage, domain }: Serving): ServerState {
  return { db: storage.db, events: domain.events, mcp: domain.mcp, replica: storage.replica };
}

/**
 * Starts what serving needs before the first call: the MCP sources (their first sync, up to the
 * startup wait) and the search index (built now, rather than in the first caller's call).
 */
async function startServing(serving: Serving, options: StartOptions): Promise<void> {
  const { domain, storage } = serving;
  await domain.mcp.start(options.mcpStartupWaitMs ?? DEFAULT_MCP_STARTUP_WAIT_MS);
  domain.index.list({ pageSize: 1 });
  setCacheSize(storage.db, CACHE_KIB.serving);
}

/** How calls are authenticated and admitted, on every protocol (src/auth). */
function callAuth(config: WayfindConfig, domain: Domain, logger: Logger) {
  const allowUnauthenticated = unauthenticatedAllowed(config);
  if (!allowUnauthenticated)
    logger.info({ host: config.server.host }, "calls need credentials (auth); none are served without");
  const authenticator = new Authenticator(config.auth, domain.keys, allowUnauthenticated);
  return {
    authenticator,
    limits: new PrincipalLimits(config.auth.limits),
    credentials: new CredentialWatch(authenticator, domain.keys),
    onDenied: (method: string, code: string) => domain.metrics?.callDenied(method, code),
  };
}

/**
 * The console's address as a person on this machine opens it: a server listening on every interface
 * is reached through loopback.
 */
function consoleUrl(host: string, port: number, tls: boolean): string {
  const reachable =
    host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host;
  return `${tls ? "https" : "http"}://${reachable}:${port}/console`;
}

/** Where ListTenants finds the tenants the server knows of (DESIGN.md §8 "Operators"). */
function tenantLookups(config: WayfindConfig, domain: Domain): TenantLookups {
  const ruleTenants = config.visibility.flatMap((rule) => (rule.match.tenant ? [rule.match.tenant] : []));
  return {
    // The key book's listing: on a replica, the fleet's keys (every replica names the same tenants).
    api_key: async (after, limit) =>
      idsAfter(
        (await domain.keyBook.list()).map((key) => key.tenant),
        after,
        limit,
      ),
    visibility_rule: (after, limit) => idsAfter(ruleTenants, after, limit),
    usage: (after, limit) => domain.usage.tenants(after, limit),
    events: (after, limit) => domain.events.tenantIds(after, limit),
  };
}

/**
 * The RPC routes: wayfind's services behind the call pipeline (credentials, roles, limits, errors,
 * logs; traced and observed when configured), and health and reflection behind a quiet one.
 */
function buildRoutes(
  storage: Storage,
  domain: Domain,
  health: HealthStatus,
  auth: ReturnType<typeof callAuth>,
  tenants: TenantLookups,
  logger: Logger,
  options: StartOptions,
): MethodRoute[] {
  const { replica } = storage;
  const { tools, usage, events, sources, metrics } = domain;
  const pipelined = withCallPipeline(
    [
      ...serviceRoutes(ToolDiscoveryService, toolDiscoveryService(tools, events, tenants, sources)),
      ...serviceRoutes(SkillServiceDesc, skillService(domain.skillService, events)),
      ...serviceRoutes(UsageService, usageService(usage, events)),
      ...serviceRoutes(KeyService, keyService(new KeyAdmin(domain.keyBook))),
    ],
    logger,
    { auth, ...(replica ? { fence: () => replica.fence() } : {}) },
  );
  const wayfindRoutes = options.traceCalls ? traceRoutes(pipelined) : pipelined;
  const reflected = [...WAYFIND_SERVICES, Health, ServerReflectionV1, ServerReflectionV1Alpha];
  return [
    ...(metrics ? metrics.observe(wayfindRoutes) : wayfindRoutes),
    ...withCallPipeline([...health.routes(), ...reflectionRoutes(reflected)], logger, { level: "debug" }),
  ];
}

/**
 * The MCP endpoint (src/mcp-endpoint): its tool calls are wayfind RPCs on the same routes, made in
 * this process with generated clients, so credentials, roles and limits are the port's.
 */
function mcpEndpointOn(
  routes: readonly MethodRoute[],
  auth: ReturnType<typeof callAuth>,
  domain: Domain,
  config: WayfindConfig,
  logger: Logger,
  fence: (() => Promise<boolean>) | undefined,
  peers: McpPeers | undefined,
): McpEndpoint {
  const transport = inProcessTransport(routes);
  /** Without credentials (a loopback server), `wayfind-tenant` names the caller's tenant. */
  const claimed = (headers: Headers) => ({
    ...ANONYMOUS_CALLER,
    tenantId: headers.get("wayfind-tenant") ?? "",
  });
  return new McpEndpoint({
    clients: {
      tools: createClient(ToolDiscoveryService, transport),
      skills: createClient(SkillServiceDesc, transport),
    },
    gateway: config.mcpServers.length > 0 ? domain.gateway : undefined,
    credentials: {
      authenticate: async (headers) => {
        // A replica: a key created or revoked on another replica before this request is in the copy.
        await fence?.();
        return auth.authenticator.authenticate(headers, claimed(headers));
      },
      admit: (principal, caller) => {
        auth.limits.admitCall(principal.id);
        return { ...admitMcpRequest(principal, caller).caller, actor: principal.id };
      },
      watch: (headers, principal, lost) =>
        auth.credentials.watch(headers, claimed(headers), principal, (error) => lost(error.message)),
    },
    config: config.server.mcp,
    maxBodyBytes: config.server.maxMessageBytes,
    logger,
    version: wayfindVersion(),
    peers,
  });
}

/** What answers plain HTTP on the service port besides the probes and metrics. */
interface WebParts {
  /** The web console at /console (when on). */
  readonly console: ConsoleFiles | undefined;
  readonly mcp: McpEndpoint | undefined;
}

/**
 * The plain-HTTP endpoints on the service port: /healthz, /readyz, /metrics, /mcp and /console,
 * each behind the request gate as every RPC is (src/server/transport/request-gate.ts).
 */
function plainHttpEndpoints(
  storage: Storage,
  domain: Domain,
  draining: AbortSignal,
  metricsScrape: StartOptions["metricsScrape"],
  web: WebParts,
): HttpEndpoints {
  const probes = healthEndpoints(() => {
    const vectors = domain.semantic?.progress() ?? { status: "off", pending: 0 };
    return {
      index: domain.index.indexCurrent ? "ok" : "building",
      database: storage.reachable() ? "ok" : "unreachable",
      writes: storage.replica?.reachable === false ? "unavailable" : "ok",
      draining: draining.aborted ? "yes" : "no",
      semantic: vectors.status,
      semanticPending: vectors.pending,
    };
  });
  const metrics = domain.metrics;
  const scrape = metrics?.endpoint(metricsScrape?.(metrics.registry));
  return (request, response) =>
    (web.mcp?.handles(request, response) ?? false) ||
    probes(request, response) ||
    (scrape?.(request, response) ?? false) ||
    (web.console?.handles(request, response) ?? false);
}

function connectionLimits(config: WayfindConfig): ConnectionLimits {
  const settings = config.server;
  return {
    handshakeTimeoutMs: secondsToMs(settings.handshakeTimeoutSeconds),
    requestHeaderTimeoutMs: secondsToMs(settings.requestHeaderTimeoutSeconds),
    requestBodyTimeoutMs: secondsToMs(settings.requestBodyTimeoutSeconds),
    idleTimeoutMs: secondsToMs(settings.idleTimeoutSeconds),
    maxConnections: settings.maxConnections,
  };
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

/** Whole milliseconds (node's HTTP timeouts take integers), at least 1. */
function secondsToMs(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1000));
}
