import cluster, { type Worker } from "node:cluster";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { AggregatorRegistry, type Registry } from "prom-client";
import type { WayfindConfig } from "../config/index.ts";
import { connectPool } from "../replication/replica.ts";
import { lockDataFolder } from "../server/data-lock.ts";
import type { WorkerSockets } from "../server/mcp-peers.ts";
import { checkPortFree } from "../server/transport/transport.ts";
import { UsageError } from "./args.ts";

/**
 * `wayfind serve --workers N`: one port served by N processes (node:cluster; the primary accepts
 * connections and hands them to the workers in turn). Each worker is a replica of the fleet on
 * storage.postgres with a copy of its own under <data dir>/workers/<n>, so the workers share every
 * change as replicas do; an MCP session stays with the worker that opened it, the others passing its
 * requests on (src/server/mcp-peers.ts). The primary forks, restarts a worker that dies, forwards
 * SIGTERM/SIGINT (drain) and SIGHUP (TLS reload), and answers the workers' /metrics with the sum over
 * all of them.
 */

/** Workers one host may run: far past any core count, a bound on a typo's cost (connections, memory). */
const MAX_WORKERS = 64;
/** The environment variable a worker learns its number from (1…N). */
const WORKER_ENV = "WAYFIND_WORKER";
/** A worker that dies is restarted after this, doubling while it keeps failing to start, up to the max. */
const RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** Workers still draining this long after SIGTERM are killed. */
const DRAIN_LIMIT_MS = 30_000;
/** How long a worker waits for the primary's sum of every worker's metrics. */
const METRICS_WAIT_MS = 5_000;

/** IPC between the primary and its workers. */
type Message =
  | { readonly type: "wayfind:listening"; readonly port: number }
  | { readonly type: "wayfind:metrics?"; readonly id: number }
  | {
      readonly type: "wayfind:metrics";
      readonly id: number;
      readonly text?: string;
      readonly error?: string;
    };

/** How many workers `--workers` asks for: a whole number from 1 to MAX_WORKERS, or auto (the cores). */
export function parseWorkers(text: string | undefined): number {
  if (text === undefined) return 1;
  const cores = availableParallelism();
  if (text === "auto") return Math.min(cores, MAX_WORKERS);
  const count = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(count >= 1 && count <= MAX_WORKERS))
    throw new UsageError(
      `wayfind serve: --workers ${text}: give a whole number of worker processes from 1 to ${MAX_WORKERS}, ` +
        `or auto (one per core: ${cores} here)\n`,
    );
  return count;
}

/**
 * N workers share the state as replicas do, through the shared database: a SQLite data dir alone has
 * one writer. Refused before anything starts, saying what to configure.
 */
export function checkWorkersCanShare(config: WayfindConfig, count: number): void {
  if (count <= 1 || config.storage.postgres !== undefined) return;
  throw new UsageError(
    `wayfind serve: --workers ${count} needs storage.postgres: the workers share the state as replicas ` +
      `do, and the SQLite data dir ${config.server.dataDir} has one writer. Set storage.postgres.url in ` +
      "the config (or WAYFIND_DATABASE_URL) to a PostgreSQL database (docs/replicas.md), or serve " +
      "with --workers 1\n",
  );
}

/** PostgreSQL connections one worker may hold: its pool, the change listener, a lease's for compaction and each MCP server. */
function connectionsPerWorker(config: WayfindConfig, poolSize: number): number {
  return poolSize + 2 + config.mcpServers.length;
}

/**
 * The workers' connections must fit in what the shared database takes (max_connections less the
 * superuser reserve), or the last workers would fail to start, or later, under load. Not judged when
 * the database does not answer: the workers then say why they cannot reach it.
 */
async function checkConnectionBudget(config: WayfindConfig, count: number): Promise<void> {
  const postgres = config.storage.postgres;
  if (count <= 1 || postgres === undefined) return;
  const pool = connectPool(postgres, 1, () => undefined);
  let budget: number;
  try {
    const { rows } = await pool.query<{ budget: number }>(
      "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int AS budget",
    );
    budget = Number(rows[0]?.budget);
  } catch {
    return;
  } finally {
    await pool.end().catch(() => undefined);
  }
  const each = connectionsPerWorker(config, postgres.poolSize);
  if (count * each <= budget) return;
  throw new UsageError(
    `wayfind serve: --workers ${count} would hold up to ${count * each} connections to PostgreSQL (${each} ` +
      `each: storage.postgres.pool_size ${postgres.poolSize}, a listener and leases), more than it takes ` +
      `(${budget}: max_connections less superuser_reserved_connections). Give fewer workers, a smaller ` +
      "storage.postgres.pool_size, or raise max_connections\n",
  );
}

/** This process's worker number (1…N) when it is a worker of `serve --workers`, else undefined. */
export function workerNumber(): number | undefined {
  return cluster.isWorker ? Number(process.env[WORKER_ENV]) : undefined;
}

/**
 * A worker's config: its own copy of the fleet's state under the data dir, and its share of the
 * cores for inference (unless tool_search.semantic.threads was set to something else than the cores).
 */
export function workerConfig(config: WayfindConfig, worker: number, count: number): WayfindConfig {
  const semantic = config.toolSearch.semantic;
  const cores = availableParallelism();
  const threads = semantic.threads === cores ? Math.max(1, Math.floor(cores / count)) : semantic.threads;
  return {
    ...config,
    server: { ...config.server, dataDir: workerDataDir(config.server.dataDir, worker) },
    toolSearch: { ...config.toolSearch, semantic: { ...semantic, threads } },
  };
}

/** Where worker n keeps its copy of the fleet's state, under the data dir `serve` was given. */
function workerDataDir(dataDir: string, worker: number): string {
  return join(dataDir, "workers", String(worker));
}

/** A Unix socket path longer than this does not fit sockaddr_un on every platform. */
const MAX_SOCKET_PATH = 100;

/** How worker `worker` reaches the other workers' MCP sessions: a socket in each one's data dir. */
export function workerSockets(config: WayfindConfig, worker: number): WorkerSockets {
  const socketOf = (n: number) => join(workerDataDir(config.server.dataDir, n), "mcp.sock");
  const deepest = socketOf(MAX_WORKERS);
  if (deepest.length > MAX_SOCKET_PATH)
    throw new UsageError(
      `wayfind serve: the data dir ${config.server.dataDir} is too long a path for the workers' sockets ` +
        `(${deepest}: over ${MAX_SOCKET_PATH} characters); give a shorter --data-dir\n`,
    );
  return { worker, socketOf };
}

/**
 * What a worker's /metrics answers: every worker's metrics summed (counters, histograms, connections
 * and memory add up; catalog sizes and the replica's figures are each worker's alike), asked of the
 * primary, which collects them from every worker (this one's `own` registry included).
 */
export function workerMetrics(own: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([own]);
  // In a worker, this answers the primary's requests for `own`.
  new AggregatorRegistry();
  const waiting = new Map<number, (message: Extract<Message, { type: "wayfind:metrics" }>) => void>();
  let asked = 0;
  process.on("message", (message: Message) => {
    if (message.type === "wayfind:metrics") waiting.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = ++asked;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error("the primary did not answer with the workers' metrics"));
      }, METRICS_WAIT_MS);
      waiting.set(id, (answer) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (answer.text === undefined) reject(new Error(answer.error ?? "no metrics"));
        else resolve(answer.text);
      });
      process.send?.({ type: "wayfind:metrics?", id } satisfies Message);
    });
}

/** Tells the primary this worker listens (it says "listening" for the host once every worker does). */
export function reportListening(port: number): void {
  process.send?.({ type: "wayfind:listening", port } satisfies Message);
}

/**
 * A worker ends when its primary does (killed, crashed): the port is the primary's, so a worker left
 * alone would serve nothing new.
 */
export function stopWithPrimary(stop: () => void): void {
  process.once("disconnect", stop);
}

/**
 * The primary of `serve --workers N`: holds the data dir, forks the workers, and returns the exit
 * code once they have stopped (SIGTERM or SIGINT: each drains; a worker failing its first start:
 * the others are stopped too). A worker that dies later is restarted; the others keep serving.
 */
export async function superviseWorkers(
  config: WayfindConfig,
  count: number,
  logger: Logger,
): Promise<number> {
  const { host, port } = config.server;
  await checkPortFree(host, port);
  await checkConnectionBudget(config, count);
  // A data dir too deep for the sockets fails here, once, rather than in every worker.
  workerSockets(config, 1);
  const releaseDataDir = lockDataFolder(config.server.dataDir);
  const metrics = new AggregatorRegistry();
  const listened = new Set<number>();
  const running = new Map<number, Worker>();
  const restartDelay = new Map<number, number>();
  let draining = false;
  let failed = false;
  /** Said once, when every worker first listens. */
  let announced = false;
  let exited: () => void = () => undefined;
  const allExited = new Promise<void>((resolve) => {
    exited = resolve;
  });

  const fork = (worker: number) => {
    const child = cluster.fork({ [WORKER_ENV]: String(worker) });
    running.set(worker, child);
    let served = false;
    child.on("message", (message: Message) => {
      if (message.type === "wayfind:listening") {
        served = true;
        restartDelay.delete(worker);
        if (listened.has(worker)) logger.info({ worker, pid: child.process.pid }, "worker restarted");
        listened.add(worker);
        if (listened.size === count && !announced) {
          announced = true;
          logger.info(
            { host, port: message.port, workers: count, dataDir: config.server.dataDir },
            "listening",
          );
        }
      } else if (message.type === "wayfind:metrics?") {
        metrics.clusterMetrics().then(
          (text) => child.send({ type: "wayfind:metrics", id: message.id, text } satisfies Message),
          (error: Error) =>
            child.send({ type: "wayfind:metrics", id: message.id, error: error.message } satisfies Message),
        );
      }
    });
    child.once("exit", (code, signal) => {
      running.delete(worker);
      if (draining || failed) {
        if (code !== 0) failed = true;
        if (running.size === 0) exited();
        return;
      }
      if (!listened.has(worker)) {
        // Its first start failed (its own error is on stderr): the same would happen again.
        logger.error({ worker, code, signal }, "worker failed to start; stopping the others");
        failed = true;
        for (const other of running.values()) other.process.kill("SIGTERM");
        if (running.size === 0) exited();
        return;
      }
      const delay = restartDelay.get(worker) ?? RESTART_DELAY_MS;
      restartDelay.set(worker, Math.min(delay * 2, MAX_RESTART_DELAY_MS));
      logger.error(
        { worker, pid: child.process.pid, code, signal, restartInMs: delay },
        served
          ? "worker died; the others keep serving, restarting it"
          : "worker failed to restart; trying again",
      );
      setTimeout(() => {
        if (!draining && !failed) fork(worker);
      }, delay).unref();
    });
  };

  const drain = (signal: NodeJS.Signals) => {
    if (draining) return;
    draining = true;
    logger.info({ signal, workers: running.size }, "signal received; draining every worker");
    for (const child of running.values()) child.process.kill("SIGTERM");
    if (running.size === 0) exited();
    setTimeout(() => {
      for (const child of running.values()) child.process.kill("SIGKILL");
    }, DRAIN_LIMIT_MS).unref();
  };
  process.on("SIGTERM", drain);
  process.on("SIGINT", drain);
  process.on("SIGHUP", () => {
    for (const child of running.values()) child.process.kill("SIGHUP");
  });

  for (let worker = 1; worker <= count; worker++) fork(worker);
  await allExited;
  releaseDataDir();
  logger.info({ workers: count }, failed ? "stopped after a worker failed" : "stopped");
  return failed ? 1 : 0;
}
