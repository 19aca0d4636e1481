/**
 * Watch fan-out benchmark:
 * `node --import tsx bench/watch-fanout.ts [--streams N] [--events N] [--rounds N] [--same-turn]`.
 * The server runs in this process; 500 WatchToolEvents streams (native gRPC) run in a child process.
 * A burst of 100 events (one per turn of the event loop) is emitted and delivered to every stream. Measured in the server's
 * process while the streams open together and while it fans out: the longest turn of the event loop
 * in main-thread CPU time (see meterTurns), the event-loop delay (perf_hooks.monitorEventLoopDelay,
 * wall time) and the time until every stream has every event.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync, readSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import pino from "pino";
import { loadConfig } from "../src/config/index.ts";
import { startServer } from "../src/server/app.ts";

const { values: flags } = parseArgs({
  options: {
    streams: { type: "string", default: "500" },
    events: { type: "string", default: "100" },
    rounds: { type: "string", default: "3" },
    "same-turn": { type: "boolean", default: false },
  },
  strict: true,
});
const STREAMS = Number(flags.streams);
const EVENTS = Number(flags.events);
const ROUNDS = Number(flags.rounds);
const SAME_TURN = flags["same-turn"];

/** Resolves on the first line of the child's stdout equal to `wanted`. */
function lineFrom(child: ChildProcess, wanted: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      if (line === wanted) {
        lines.close();
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`watch clients exited with ${code} before "${wanted}"`)));
  });
}

const schedstat = openSync(`/proc/self/task/${process.pid}/schedstat`, "r");
const schedstatBytes = Buffer.alloc(128);

/**
 * CPU time of this process's main thread in ms (Linux schedstat: not counting GC or libuv threads).
 * One read of a file kept open: it runs every turn, and opening the file each time cost the server
 * more of its main thread than the fan-out it measures.
 */
function mainThreadCpuMs(): number {
  const length = readSync(schedstat, schedstatBytes, 0, schedstatBytes.length, 0);
  const line = schedstatBytes.toString("latin1", 0, length);
  return Number(line.slice(0, line.indexOf(" "))) / 1e6;
}

/**
 * Tracks the main thread's CPU time of each event-loop iteration (check phase to check phase): what a
 * concurrent call waits for, and unlike wall time not inflated when a busy machine preempts the process.
 */
function meterTurns(): { stop(): number } {
  let longest = 0;
  let last = mainThreadCpuMs();
  let running = true;
  const onCheck = () => {
    const now = mainThreadCpuMs();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(onCheck);
  };
  setImmediate(onCheck);
  return {
    stop() {
      running = false;
      return longest;
    },
  };
}

const dataDir = mkdtempSync(join(tmpdir(), "wayfind-bench-watch-"));
try {
  const config = loadConfig(undefined, { WAYFIND_PORT: "0", WAYFIND_DATA_DIR: dataDir });
  const server = await startServer(config, pino({ level: "silent" }));
  // The start's own work (the model, the catalog's vectors) done first: it is not the streams'.
  for (let ready = false; !ready; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const answer = (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as {
      checks?: { semantic?: string };
    };
    ready = answer.checks?.semantic === "ready";
  }
  console.log(
    `${STREAMS} watch streams (native gRPC, 100 per connection), a burst of ${EVENTS} events ` +
      (SAME_TURN ? "emitted in one turn" : "one per turn"),
  );
  for (let round = 1; round <= ROUNDS; round++) {
    const clients = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(import.meta.dirname, "lib", "watch-clients.ts"),
        String(server.port),
        String(STREAMS),
        String(EVENTS),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    // The streams opening together (their calls authenticated, subscribed, their status sent).
    const openingDelay = monitorEventLoopDelay({ resolution: 1 });
    openingDelay.enable();
    const openingTurns = meterTurns();
    const openingStarted = performance.now();
    await lineFrom(clients, "ready");
    const openingMs = performance.now() - openingStarted;
    openingDelay.disable();
    console.log(
      `  round ${round}: ${STREAMS} streams open in ${openingMs.toFixed(0)} ms (the client process's start included); ` +
        `longest turn ${openingTurns.stop().toFixed(1)} ms CPU; event-loop delay max ${(openingDelay.max / 1e6).toFixed(1)} ms`,
    );
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const turns = meterTurns();
    const started = performance.now();
    const done = lineFrom(clients, "done");
    // The emits themselves (500 subscribers offered each event), to tell them from the fan-out.
    let emitCpuMs = 0;
    // The burst comes from calls in quick succession: one event per turn of the event loop, or with
    // --same-turn all in one (as many calls finishing in one turn would), the worst case.
    for (let i = 0; i < EVENTS; i++) {
      const before = mainThreadCpuMs();
      server.events.emit({
        type: "tool_search_query",
        tenantId: "acme",
        attributes: { query: `q${i}`, result_count: 8 },
      });
      emitCpuMs += mainThreadCpuMs() - before;
      if (!SAME_TURN) await new Promise((resolve) => setImmediate(resolve));
    }
    await done;
    const elapsed = performance.now() - started;
    delay.disable();
    const longestTurnCpuMs = turns.stop();
    console.log(
      `  round ${round}: all delivered in ${elapsed.toFixed(0)} ms; longest turn ${longestTurnCpuMs.toFixed(1)} ms CPU ` +
        `(the ${EVENTS} emits: ${emitCpuMs.toFixed(1)} ms); ` +
        `event-loop delay max ${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
    );
    clients.kill();
  }
  await server.stop();
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
