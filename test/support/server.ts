import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import pino, { type Logger } from "pino";
import { stringify } from "yaml";
import { loadConfig, type WayfindConfig } from "../../src/config/index.ts";
import { type RunningServer, startServer } from "../../src/server/app.ts";
import type { EventExport } from "../../src/server/event-export.ts";
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

/**
 * Starts the real server on a free port with a real SQLite file in a fresh temp dir, configured from
 * `yamlConfig` (the same YAML a user writes; relative paths resolve against the temp dir).
 */
export async function startTestServer(
  yamlConfig: Record<string, unknown> = {},
  options: { dataDir?: string; logger?: Logger; traceCalls?: boolean; eventExport?: EventExport } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "wayfind-test-"));
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
  const config = loadConfig(configFile, {});
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
