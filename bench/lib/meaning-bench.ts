/**
 * What the meaning-under-load benches share (bench/meaning-rates.ts, bench/meaning-quality.ts): a
 * 10,000-tool catalog grown from the public sets, `wayfind serve` child processes on it (hybrid by
 * default, and words only), requests never seen by a server, and a process that keeps both cores busy.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { clipQuery, growCatalog, readQueries, writeCatalogFiles } from "./discovery-data.ts";
import { type ServerProcess, spawnServer, wayfindServeArgs } from "./grpc-bench-support.ts";

export const TENANT = "bench";

/** Writes the catalog's files and two configs beside them: hybrid.yaml (the default) and words.yaml. */
export function writeConfigs(work: string, tools: number): void {
  const catalogs = writeCatalogFiles(work, growCatalog(tools));
  writeFileSync(join(work, "hybrid.yaml"), catalogs);
  writeFileSync(join(work, "words.yaml"), `${catalogs}tool_search: {semantic: {enabled: false}}\n`);
}

/** `node bin/wayfind.js serve` on `config` and `dataDir` (both under `work`), logging to a file there. */
export function startWayfind(work: string, config: string, dataDir: string): Promise<ServerProcess> {
  process.stderr.write(`· starting wayfind (${config}, ${dataDir})\n`);
  return spawnServer(wayfindServeArgs(join(work, config), join(work, dataDir)), {
    logFile: join(work, `${dataDir}-${Date.now()}.log`),
  });
}

/** Waits until every tool has its vector (/readyz no longer says the semantic part is partial). */
export async function vectorsReady(server: ServerProcess): Promise<void> {
  for (;;) {
    const answer = (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as {
      checks: { semantic?: string };
    };
    if (answer.checks.semantic !== "partial") return;
    await new Promise((done) => setTimeout(done, 500));
  }
}

/** The server's model capacity lately, in request texts a second (its metric). */
export async function capacity(server: ServerProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  return Number(/^wayfind_semantic_capacity_texts_per_second (\S+)/m.exec(text)?.[1] ?? 0);
}

/**
 * Requests never sent before in this process: MetaTool's distinct requests (short, one intent or two),
 * handed out once each, in file order.
 */
export class FreshRequests {
  private readonly all = [...new Set(readQueries("metatool_queries.jsonl").map((q) => clipQuery(q.query)))];
  private taken = 0;

  take(count: number): string[] {
    const slice = this.all.slice(this.taken, this.taken + count);
    this.taken += count;
    if (slice.length < count) throw new Error("bench: not enough distinct MetaTool requests");
    return slice;
  }
}

/** Processes that keep every core busy (another program's work on the machine) until stopped. */
export function busyMachine(): { stop(): Promise<void> } {
  const children: ChildProcess[] = Array.from({ length: availableParallelism() }, () =>
    spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }),
  );
  return {
    stop: () =>
      Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once("exit", () => resolve());
              child.kill("SIGKILL");
            }),
        ),
      ).then(() => undefined),
  };
}

export const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
export const ms = (x: number) => x.toFixed(1);
