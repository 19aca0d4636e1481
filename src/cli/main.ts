import { resolve } from "node:path";
import pino from "pino";
import pretty from "pino-pretty";
import { checkoutPath, wayfindVersion } from "../checkout.ts";
import { applyCliOverrides, applySecurityFlags, loadConfig } from "../config/index.ts";
import { startServer } from "../server/app.ts";
import { eventExportFromEnv } from "../server/event-export.ts";
import { tracingFromEnv } from "../server/tracing.ts";
import { commandArgs, UsageError, unknownWord } from "./args.ts";
import { runCatalogStats } from "./catalog-stats.ts";
import { type CredentialSource, credentialProblem } from "./credential.ts";
import { runDemo } from "./demo.ts";
import { runKeys } from "./keys.ts";
import { runLearning } from "./learning.ts";
import { runMcpBridge } from "./mcp-bridge.ts";
import { skillPackProgressBar } from "./progress.ts";
import { listSources } from "./sources.ts";
import { runStorage } from "./storage.ts";
import {
  checkWorkersCanShare,
  parseWorkers,
  reportListening,
  stopWithPrimary,
  superviseWorkers,
  workerConfig,
  workerMetrics,
  workerNumber,
  workerSockets,
} from "./workers.ts";

/** Served when no --config is given: a demo catalog and skill pack, so a fresh checkout is useful. */
const DEMO_CONFIG = checkoutPath("demo/wayfind.yaml");

const SERVE_USAGE = `Usage: wayfind serve [--config FILE] [--host H] [--port P] [--data-dir DIR] [--workers N|auto] [--tls-cert F --tls-key F]

Runs the server: gRPC, gRPC-Web and Connect on one port. SIGHUP reloads the TLS certificate and key.
SIGTERM or SIGINT drains in-flight calls and stops.

Options:
  --config FILE    YAML configuration (see wayfind.example.yaml; default $WAYFIND_CONFIG, else
                   demo/wayfind.yaml)
  --host H         interface to listen on (default 127.0.0.1)
  --port P         port (default 50051; 0 picks a free one)
  --data-dir DIR   where the SQLite database lives (default $WAYFIND_DATA_DIR, else ./.wayfind)
  --workers N      serve the port from N processes (default 1; auto: one per core), each a replica
                   of the state on storage.postgres (needed for N > 1) with its copy under
                   DIR/workers/<n>; one that dies is restarted, /metrics sums them all
  --tls-cert FILE  serve TLS with this PEM certificate chain (with --tls-key)
  --tls-key FILE   the certificate's PEM private key
  --insecure-allow-unauthenticated
                   serve calls without credentials on a host that is not loopback: anyone who
                   reaches the port can act as any tenant (development networks only)
  -h, --help       this help
`;

const SOURCES_USAGE = `Usage: wayfind sources [--addr HOST:PORT] [--api-key KEY]

Prints every tool source (catalog files, MCP servers, API) of a running server with its health;
exits 1 when one is unhealthy.

Options:
  --addr HOST:PORT server to ask (default 127.0.0.1:50051, or an http(s):// URL; for a private CA
                   set NODE_EXTRA_CA_CERTS=ca.pem)
  --api-key KEY    an operator (admin) API key or token (default $WAYFIND_API_KEY)
  -h, --help       this help
`;

const MCP_USAGE = `Usage: wayfind mcp [--url URL] [--api-key KEY] [--tenant T] [--tool-list fixed|activated]

An MCP server on stdin/stdout for clients that launch a command: every message goes to the /mcp
endpoint of a running wayfind (docs/mcp.md). Nothing but MCP messages is written to stdout.

Options:
  --url URL        the wayfind server (default http://127.0.0.1:50051; https:// for TLS, with
                   NODE_EXTRA_CA_CERTS=ca.pem for a private CA)
  --api-key KEY    an API key or token (default $WAYFIND_API_KEY); its tenant and roles apply
  --tenant T       the tenant to act for on a server that takes calls without credentials
  --tool-list L    fixed (the meta tools; never changes) or activated (also the tools the session
                   activates, announced with tools/list_changed); default: the server's
                   server.mcp.tool_list
  -h, --help       this help
`;

const USAGE = `wayfind — tool and skill discovery for LLM agents

Usage:
  wayfind serve [--config FILE] [--host H] [--port P] [--data-dir DIR] [--workers N|auto] [--tls-cert F --tls-key F]
  wayfind sources [--addr HOST:PORT] [--api-key KEY]
  wayfind mcp [--url URL] [--api-key KEY] [--tenant T] [--tool-list fixed|activated]
  wayfind catalog stats [--config FILE] [--provider anthropic|openai|gemini] [--ceiling N] [--budget N]
  wayfind demo reset [--data-dir DIR]
  wayfind keys create|list|revoke …
  wayfind learning show|reset|export|import --tenant T …
  wayfind storage copy-to-postgres [--data-dir DIR] [--config FILE]
  wayfind --version

Commands:
  serve            run the server
  sources          print every tool source (catalog files, MCP servers, API) with its health
  mcp              an MCP server on stdin/stdout that passes everything to a running wayfind
  catalog stats    the rendered size of every configured tool, against a per-tool ceiling and a
                   total budget (exits 1 when over), so bloat shows before users pay for it
  demo reset       delete the demo server's data, so the next serve starts from the demo again
  keys             create, list and revoke API keys (the secret is printed once)
  learning         what a tenant's traffic taught its search: show, reset, export, import
  storage          copy-to-postgres: move one server's SQLite data folder onto a new PostgreSQL
                   database, where a fleet of replicas starts from it

Run "wayfind <command> --help" for a command's options.
`;

const COMMANDS = ["serve", "sources", "mcp", "catalog", "demo", "keys", "learning", "storage", "help"];

/** The credential of a command: its --api-key, else $WAYFIND_API_KEY, and which one it was. */
function givenKey(flag: string | undefined): { key: string | undefined; source: CredentialSource } {
  if (flag !== undefined) return { key: flag, source: "--api-key" };
  return { key: process.env.WAYFIND_API_KEY || undefined, source: "WAYFIND_API_KEY" };
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-v") {
    process.stdout.write(`wayfind ${wayfindVersion()}\n`);
    return 0;
  }
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === "sources") {
    const values = commandArgs("sources", SOURCES_USAGE, rest, {
      addr: { type: "string" },
      "api-key": { type: "string" },
    });
    if (!values) return 0;
    const { key, source } = givenKey(values["api-key"]);
    const problem = key === undefined ? undefined : credentialProblem(key, source);
    if (problem) throw new UsageError(`wayfind sources: ${problem}\n`);
    return listSources(values.addr ?? "127.0.0.1:50051", process.stdout, key);
  }
  if (command === "mcp") {
    const values = commandArgs("mcp", MCP_USAGE, rest, {
      url: { type: "string" },
      "api-key": { type: "string" },
      tenant: { type: "string" },
      "tool-list": { type: "string" },
    });
    if (!values) return 0;
    const toolList = values["tool-list"];
    if (toolList !== undefined && toolList !== "fixed" && toolList !== "activated")
      throw new UsageError(
        `--tool-list ${toolList} is not a tool list: use fixed or activated\n\n${MCP_USAGE}`,
      );
    const { key, source } = givenKey(values["api-key"]);
    return runMcpBridge({
      toolList,
      url: values.url ?? "http://127.0.0.1:50051",
      apiKey: key,
      refusal: key === undefined ? undefined : credentialProblem(key, source),
      tenant: values.tenant,
      log: (line) => process.stderr.write(`wayfind mcp: ${line}\n`),
    });
  }
  if (command === "demo") return runDemo(rest, process.stdout);
  if (command === "keys")
    return runKeys(rest, process.stdout, process.stderr, (file) => loadConfig(file ?? DEMO_CONFIG));
  if (command === "learning")
    return runLearning(rest, process.stdout, (file) => loadConfig(file ?? DEMO_CONFIG));
  if (command === "storage")
    return runStorage(rest, process.stdout, (file) => loadConfig(file ?? DEMO_CONFIG));
  if (command === "catalog") {
    if (rest[0] !== "stats") throw unknownWord("wayfind catalog", rest[0], ["stats"], USAGE);
    return runCatalogStats(rest.slice(1), (file) => loadConfig(file ?? DEMO_CONFIG));
  }
  if (command !== "serve") throw unknownWord("wayfind", command, COMMANDS, USAGE);
  const values = commandArgs("serve", SERVE_USAGE, rest, {
    config: { type: "string" },
    host: { type: "string" },
    port: { type: "string" },
    "data-dir": { type: "string" },
    "tls-cert": { type: "string" },
    "tls-key": { type: "string" },
    "insecure-allow-unauthenticated": { type: "boolean" },
    workers: { type: "string" },
  });
  if (!values) return 0;
  const workers = parseWorkers(values.workers);
  // A container names its mounted config by the environment (Dockerfile, the Helm chart).
  const configFile = values.config ?? (process.env.WAYFIND_CONFIG || undefined);
  const served = applySecurityFlags(
    applyCliOverrides(loadConfig(configFile ?? DEMO_CONFIG), {
      host: values.host,
      port: values.port,
      // The demo config keeps its data where the user runs it, as docs/design.md §6 promises
      // (./.wayfind), unless the environment names the data folder (the image's volume).
      dataDir: values["data-dir"] ?? (configFile || process.env.WAYFIND_DATA_DIR ? undefined : ".wayfind"),
    }),
    {
      tlsCert: values["tls-cert"],
      tlsKey: values["tls-key"],
      insecureAllowUnauthenticated: values["insecure-allow-unauthenticated"],
    },
    (path) => resolve(path),
  );
  checkWorkersCanShare(served, workers);
  // Set in a worker process of `serve --workers` (which runs this same command line).
  const worker = workerNumber();
  const config = worker === undefined ? served : workerConfig(served, worker, workers);
  const logger = pino(
    {
      level: config.logging.level,
      base: worker === undefined ? undefined : { worker },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    // A person at a terminal reads lines; anything else (a file, a collector) gets JSON lines.
    process.stdout.isTTY
      ? pretty({ colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" })
      : undefined,
  );
  // bin/wayfind.js relaunches `serve` with its allocator and heap settings (scripts/tuning.js).
  if (process.env.WAYFIND_PROCESS_TUNED !== "1")
    logger.warn(
      { node: process.versions.node },
      "memory settings not applied (bin/wayfind.js does, on Node >= 22.15): large catalogs take more resident memory",
    );
  if (worker === undefined && workers > 1) return superviseWorkers(config, workers, logger);
  // OpenTelemetry tracing when the usual OTEL_* variables ask for it (docs/api.md, "Tracing").
  const tracing = tracingFromEnv(process.env);
  // The event log as OpenTelemetry log records when the OTEL_* variables ask for them.
  const eventExport = eventExportFromEnv(process.env);
  const starting = startServer(config, logger, {
    onSkillPackProgress: skillPackProgressBar(process.stderr),
    compactHeapBeforeListening: true,
    traceCalls: tracing !== undefined,
    eventExport,
    ...(worker === undefined
      ? {}
      : { metricsScrape: workerMetrics, workerSockets: workerSockets(served, worker) }),
  });
  // Installed before the server listens: a signal right after the "listening" line (or during the
  // start) must find them, not node's defaults, which end the process without draining.
  let server: Awaited<typeof starting> | undefined;
  // A renewed certificate (cert-manager, certbot) is picked up without dropping open connections.
  process.on("SIGHUP", () => {
    try {
      if (!server) throw new Error("the server is still starting");
      server.reloadTls();
    } catch (error) {
      logger.error(
        { error: error instanceof Error ? error.message : String(error) },
        "TLS reload failed; the old certificate stays",
      );
    }
  });
  // Once, however many signals come (a worker gets the terminal's SIGINT and its primary's SIGTERM).
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: reason }, "signal received");
    void starting
      .then((started) => started.stop())
      .then(() => Promise.all([tracing?.shutdown(), eventExport?.shutdown()]))
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stop(signal));
  if (worker !== undefined) stopWithPrimary(() => stop("primary gone"));
  server = await starting;
  if (worker !== undefined) reportListening(server.port);
  return -1;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}`);
      process.exit(2);
    }
    process.stderr.write(`wayfind: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
