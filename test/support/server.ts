import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import {
  type Client,
  createClient,
  createRouterTransport,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import pino, { type Logger } from "pino";
import { stringify } from "yaml";
import { CLIENT_CERTIFICATE_HEADER } from "../../src/auth/index.ts";
import { loadConfig, type WayfindConfig } from "../../src/config/index.ts";
import {
  type InProcessServer,
  type RunningServer,
  startInProcess,
  startServer,
} from "../../src/server/app.ts";
import type { EventExport } from "../../src/server/event-export.ts";
import { type MethodRoute, observeRoute } from "../../src/server/transport/rpc.ts";
import { toRpcError } from "../../src/server/transport/rpc-errors.ts";
import { bearer } from "./auth.ts";
import { createDatabase, sharedPostgres } from "./postgres.ts";

export interface TestServer {
  readonly server: RunningServer;
  readonly port: number;
  readonly baseUrl: string;
  readonly dataDir: string;
  readonly config: WayfindConfig;
  /** The YAML config the server was started with, to restart it the same way. */
  readonly configYaml: Record<string, unknown>;
  /** A generated client over native gRPC (HTTP/2), the protocol agents use. */
  grpc<S extends DescService>(service: S): Client<S>;
  /** A generated client over the Connect protocol (HTTP/1.1 JSON unless binary is asked for). */
  connect<S extends DescService>(service: S, options?: { binary?: boolean }): Client<S>;
  grpcWeb<S extends DescService>(service: S): Client<S>;
  /** Stops the server; `keepData` leaves the data dir for a restart test. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

interface StartTestOptions {
  /** The data dir to use (and keep on stop), e.g. a stopped server's, to restart it. */
  dataDir?: string;
  logger?: Logger;
  traceCalls?: boolean;
}

/**
 * Starts the real server on a free port with a real SQLite file in a fresh temp dir, configured from
 * `yamlConfig` (the same YAML a user writes; relative paths resolve against the temp dir).
 */
export async function startTestServer(
  yamlConfig: Record<string, unknown> = {},
  options: StartTestOptions & { eventExport?: EventExport } = {},
): Promise<TestServer> {
  const { dataDir, config } = await testConfig(yamlConfig, options.dataDir);
  const logger = options.logger ?? pino({ level: "silent" });
  const server = await startServer(config, logger, {
    drainGraceMs: 2_000,
    traceCalls: options.traceCalls,
    ...(options.eventExport ? { eventExport: options.eventExport } : {}),
  });
  const baseUrl = `http://127.0.0.1:${server.port}`;
  return {
    server,
    port: server.port,
    baseUrl,
    dataDir,
    config,
    configYaml: yamlConfig,
    grpc: (service) => createClient(service, createGrpcTransport({ baseUrl })),
    connect: (service, clientOptions) =>
      createClient(
        service,
        createConnectTransport({
          baseUrl,
          httpVersion: "1.1",
          useBinaryFormat: clientOptions?.binary ?? false,
        }),
      ),
    grpcWeb: (service) => createClient(service, createGrpcWebTransport({ baseUrl, httpVersion: "2" })),
    async stop(stopOptions) {
      await server.stop();
      if (!stopOptions?.keepData && !options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** What a client of a router server sends: `token` as `authorization: Bearer <token>`. */
interface RouterClientOptions {
  readonly token?: string;
}

/**
 * A server started by startRouterServer: the same server as startTestServer's, without a port. Its
 * clients call the routes in this process through connect's router transport (the Connect protocol,
 * encoded and decoded as on the wire), so `grpc` and `connect` differ only in the encoding: what
 * depends on a protocol's wire format is tested on a port.
 */
export interface RouterTestServer {
  readonly server: InProcessServer;
  readonly dataDir: string;
  readonly config: WayfindConfig;
  /** The YAML config the server was started with, to restart it the same way. */
  readonly configYaml: Record<string, unknown>;
  /** A generated client sending binary protobuf (what gRPC carries). */
  grpc<S extends DescService>(service: S, options?: RouterClientOptions): Client<S>;
  /** A generated client sending JSON unless binary is asked for (what the Connect protocol carries). */
  connect<S extends DescService>(service: S, options?: RouterClientOptions & { binary?: boolean }): Client<S>;
  /** Stops the server; `keepData` leaves the data dir for a restart test. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

/**
 * The server of startTestServer (config from `yamlConfig`, real SQLite in a fresh temp dir or
 * PostgreSQL as there, the same domain, sources and call pipeline: credentials, roles, caller binding,
 * limits, logs) served in process through connect's router transport: for suites where only the
 * handlers matter. What a port adds (TLS and client certificates, Host and CORS checks, credentials
 * refused before the body, /mcp and the other HTTP endpoints, each protocol's wire format) is tested
 * with startTestServer.
 */
export async function startRouterServer(
  yamlConfig: Record<string, unknown> = {},
  options: StartTestOptions = {},
): Promise<RouterTestServer> {
  const { dataDir, config } = await testConfig(yamlConfig, options.dataDir);
  const server = await startInProcess(config, options.logger ?? pino({ level: "silent" }), {
    traceCalls: options.traceCalls,
  });
  const transports = new Map<string, Transport>();
  const client = <S extends DescService>(service: S, binary: boolean, token: string | undefined) => {
    const key = `${binary}:${token ?? ""}`;
    let transport = transports.get(key);
    if (transport === undefined) {
      transport = routerTransport(server, config, binary, token === undefined ? [] : [bearer(token)]);
      transports.set(key, transport);
    }
    return createClient(service, transport);
  };
  return {
    server,
    dataDir,
    config,
    configYaml: yamlConfig,
    grpc: (service, clientOptions) => client(service, true, clientOptions?.token),
    connect: (service, clientOptions) =>
      client(service, clientOptions?.binary ?? false, clientOptions?.token),
    async stop(stopOptions) {
      await server.stop();
      if (!stopOptions?.keepData && !options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Connect's router transport on the server's routes, set as the port's connect-node router is
 * (src/server/transport/connect-adapter.ts): the size limit, unknown JSON fields refused, streams ended on stop,
 * what a handler throws answered through the one error mapping. A client cannot send the client
 * certificate header, as on the port (the transport sets it from the TLS session only).
 */
function routerTransport(
  server: InProcessServer,
  config: WayfindConfig,
  binary: boolean,
  interceptors: Interceptor[],
): Transport {
  return createRouterTransport(
    (router) => {
      for (const route of server.routes) {
        const { method, impl } = observeRoute(endedOnAbort(route), rpcErrors);
        router.rpc(method, impl);
      }
    },
    {
      router: {
        readMaxBytes: config.server.maxMessageBytes,
        shutdownSignal: server.shutdownSignal,
        jsonOptions: { ignoreUnknownFields: false },
      },
      transport: { useBinaryFormat: binary, interceptors: [withoutClientCertificate, ...interceptors] },
    },
  );
}

const rpcErrors = { begin: () => ({ succeeded: () => {}, failed: toRpcError }) };

/**
 * A server stream read on to its end once its call is aborted (the client went away, the server
 * stops), as a port's transport reads it until it ends: the router transport reads only what its
 * client asks for, so a stream its client left would stay suspended at its last message, never seeing
 * the abort nor giving back what it holds (an open-stream slot, a credential watch).
 */
function endedOnAbort(route: MethodRoute): MethodRoute {
  if (route.kind !== "server_streaming") return route;
  const { method, impl } = route;
  return {
    kind: "server_streaming",
    method,
    impl(input, context) {
      const stream = impl(input, context)[Symbol.asyncIterator]();
      const readToEnd = async () => {
        try {
          while (!(await stream.next()).done);
        } catch {
          // The call's own error: the pipeline has logged it; its client is gone.
        }
      };
      if (context.signal.aborted) void readToEnd();
      else context.signal.addEventListener("abort", readToEnd, { once: true });
      return { [Symbol.asyncIterator]: () => stream };
    },
  };
}

const withoutClientCertificate: Interceptor = (next) => (request) => {
  request.header.delete(CLIENT_CERTIFICATE_HEADER);
  return next(request);
};

/**
 * Writes `yamlConfig` as the server's config file in the data dir (a fresh temp dir unless given)
 * with the test defaults (port 0, lexical ranking unless asked, PostgreSQL storage when the suite
 * runs on it) and loads it.
 */
async function testConfig(
  yamlConfig: Record<string, unknown>,
  givenDataDir: string | undefined,
): Promise<{ dataDir: string; config: WayfindConfig }> {
  const dataDir = givenDataDir ?? mkdtempSync(join(tmpdir(), "wayfind-test-"));
  const configFile = join(dataDir, "wayfind.yaml");
  const storage =
    process.env.WAYFIND_TEST_STORAGE === "postgres" ? { storage: await sharedDatabase(dataDir) } : {};
  writeFileSync(
    configFile,
    stringify({
      ...yamlConfig,
      ...storage,
      server: { port: 0, data_dir: dataDir, ...(yamlConfig.server as object) },
      tool_search: withLexicalUnlessAsked(yamlConfig.tool_search),
    }),
  );
  return { dataDir, config: loadConfig(configFile, {}) };
}

/**
 * Test servers rank by words alone unless the test configures `tool_search.semantic` itself (the
 * semantic suites, and the one that checks the default): most suites pin lexical scores and orders,
 * and loading the model costs each start most of a second of CPU.
 */
function withLexicalUnlessAsked(toolSearch: unknown): Record<string, unknown> {
  const given = (toolSearch ?? {}) as Record<string, unknown>;
  return "semantic" in given ? given : { ...given, semantic: { enabled: false } };
}

/** Data dir → its database: a server restarted on its data dir finds the database its copy follows. */
const databases = new Map<string, Promise<string>>();

/**
 * With WAYFIND_TEST_STORAGE=postgres (`npm test` runs the server suites a second time so), every
 * test server is a replica on a database of its own, in one PostgreSQL per test process.
 */
async function sharedDatabase(dataDir: string): Promise<{ postgres: { url: string } }> {
  const server = await sharedPostgres();
  let url = databases.get(dataDir);
  if (url === undefined) {
    url = createDatabase(server.url, `wayfind_${process.pid}_${databases.size + 1}`);
    databases.set(dataDir, url);
  }
  return { postgres: { url: await url } };
}
