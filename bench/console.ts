/**
 * The web console (console/, served at /console) in Debian's Chromium (playwright-core) against
 * `wayfind serve` with the demo config on loopback (no sign-in). The bench process, the server and
 * Chromium share the machine. Prints:
 *  - first load: 20 loads of /console, each in a fresh browser context (cold cache), from navigation
 *    start until the frame that shows the Overview's first uPlot chart: p50 / p99 / max (target ≤ 1 s);
 *  - the Live events page while this process emits BENCH_CONSOLE_RATE events/s (default 1,000) for
 *    BENCH_CONSOLE_SECONDS (default 60), in 10 ms ticks, as ActivateTools calls of the demo's deferred
 *    tools, each in a run of its own (one `tool_activated` event per tool: many events per call, so
 *    the load generator does not need the machine's cores the page and server need):
 *    events sent/s, events the page counted, frames per second over one-second windows (target: never
 *    below 30), the page's JS heap at start, middle and end (target: bounded; the page keeps 10,000
 *    events), the server's event-loop delay and CPU.
 * Run: `node --import tsx bench/console.ts` (BENCH_CONSOLE_SECONDS=20 for a short run).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Browser, CDPSession, Page } from "playwright-core";
import { LoadingMode, ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import { buildConsole } from "../scripts/console-build.js";
import { launchChromium } from "../test/support/browser.ts";
import {
  prepareWayfind,
  printAligned,
  ROOT,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const SECONDS = Number(process.env.BENCH_CONSOLE_SECONDS ?? 60);
const RATE = Number(process.env.BENCH_CONSOLE_RATE ?? 1000);
const LOADS = 20;
const TICK_MS = 10;
/** Calls in flight beyond which a tick sends nothing (a server that cannot keep up is seen, not buried). */
const MAX_IN_FLIGHT = 500;
/** Deferred tools activated per call (each call, in a new run, records one event per tool). */
const TOOLS_PER_CALL = 10;
const VIEWPORT = { width: 1280, height: 900 };

/**
 * Preloaded into the server (`node --import`): each second, appends the longest event-loop delay of
 * that second (wall time: a turn that ran long, or the process waiting for a core) to $BENCH_LOOP_FILE.
 */
const LOOP_METER = `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
setInterval(() => {
  appendFileSync(process.env.BENCH_LOOP_FILE, JSON.stringify({ at: Date.now(), maxMs: delay.max / 1e6 }) + "\\n");
  delay.reset();
}, 1000).unref();
`)}`;

/** Page script (before any of the page's own): when the first chart's canvas exists, the next frame's time. */
const FIRST_CHART_PROBE = `
new MutationObserver((_, observer) => {
  if (!document.querySelector("figure.chart canvas")) return;
  observer.disconnect();
  requestAnimationFrame(() => { globalThis.__firstChartMs = performance.now(); });
}).observe(document, { childList: true, subtree: true });`;

/** Page script: frames per one-second window, and the longest main-thread task (Long Tasks API). */
const FRAME_METER = `(() => {
globalThis.__fps = []; globalThis.__longestTaskMs = 0;
let frames = 0, windowStart = performance.now();
const tick = (now) => {
  frames++;
  if (now - windowStart >= 1000) { __fps.push((frames * 1000) / (now - windowStart)); frames = 0; windowStart = now; }
  requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
new PerformanceObserver((list) => {
  for (const task of list.getEntries()) __longestTaskMs = Math.max(__longestTaskMs, task.duration);
}).observe({ type: "longtask" });
})()`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const f0 = (n: number) => n.toFixed(0);
const f1 = (n: number) => n.toFixed(1);

/** Busy (not idle, not iowait) time of all cores so far, from /proc/stat, in ms. */
function machineBusyMs(): number {
  const ticks = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]?.split(/\s+/).slice(1).map(Number) ?? [];
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
  return ((total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) * 1000) / 100;
}

/** Milliseconds from navigation start to the first frame with an Overview chart, in a cold context. */
async function firstLoad(browser: Browser, baseUrl: string): Promise<number> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    const page = await context.newPage();
    await page.addInitScript({ content: FIRST_CHART_PROBE });
    await page.goto(`${baseUrl}/console`, { waitUntil: "commit" });
    const drawn = await page.waitForFunction(
      // A function, not a string: the console's CSP refuses eval in the page.
      () => (globalThis as { __firstChartMs?: number }).__firstChartMs,
      undefined,
      { timeout: 30_000 },
    );
    return Number(await drawn.jsonValue());
  } finally {
    await context.close();
  }
}

/** The "N received" of the Live events page's status. */
async function receivedOnPage(page: Page): Promise<number> {
  const text = await page.getByRole("status").filter({ hasText: "received" }).textContent();
  return Number(/([\d,]+) received/.exec(text ?? "")?.[1]?.replaceAll(",", "") ?? Number.NaN);
}

async function heapMiB(cdp: CDPSession, collectFirst = false): Promise<number> {
  if (collectFirst) await cdp.send("HeapProfiler.collectGarbage");
  const { metrics } = await cdp.send("Performance.getMetrics");
  return (metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? Number.NaN) / 2 ** 20;
}

async function liveEvents(browser: Browser, server: ServerProcess, baseUrl: string, loopFile: string) {
  const tools = createClient(ToolDiscoveryService, createGrpcTransport({ baseUrl }));
  const listing = await tools.listTools({ caller: { tenantId: "bench" }, pageSize: 500, showAllTools: true });
  const names = listing.tools
    .filter((tool) => tool.loadingMode === LoadingMode.DEFERRED)
    .slice(0, TOOLS_PER_CALL)
    .map((tool) => tool.name);
  let runs = 0;
  const activate = () =>
    tools.activateTools({ caller: { tenantId: "bench", sessionId: "bench", runId: `run-${++runs}` }, names });
  const probe = await activate();
  if (probe.activated.length !== names.length || names.length === 0)
    throw new Error(`the demo catalog's deferred tools did not activate (${names.join(", ")})`);
  const perCall = names.length;

  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    const page = await context.newPage();
    await page.goto(`${baseUrl}/console#/events`);
    await page.getByRole("status").filter({ hasText: /^live/ }).waitFor();
    // The stream is open once the probe's event (replayed from the oldest) is counted.
    while (!((await receivedOnPage(page)) >= 1)) await sleep(100);
    await sleep(2_000);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Performance.enable");
    const heapStart = await heapMiB(cdp, true);
    const receivedBefore = await receivedOnPage(page);
    await page.evaluate(FRAME_METER);

    let sent = 0;
    let done = 0;
    let failed = 0;
    let slots = 0;
    const heap: { atS: number; mib: number }[] = [];
    const cpu0 = { server: server.cpuMs(), bench: process.cpuUsage(), machine: machineBusyMs() };
    const started = performance.now();
    const startedAt = Date.now();
    const timer = setInterval(() => {
      // On an absolute schedule (a late tick sends what the missed ones would have), unless
      // MAX_IN_FLIGHT calls are unanswered.
      const calls = (RATE * SECONDS) / perCall;
      const due = Math.min(Math.floor(((performance.now() - started) * RATE) / 1000 / perCall), calls);
      for (; slots < due; slots++) {
        if (sent - done - failed >= MAX_IN_FLIGHT) continue;
        sent++;
        activate().then(
          () => done++,
          () => failed++,
        );
      }
    }, TICK_MS);
    try {
      for (let next = 5; next <= SECONDS; next += 5) {
        await sleep(started + next * 1000 - performance.now());
        heap.push({ atS: next, mib: await heapMiB(cdp) });
      }
      if (SECONDS % 5 !== 0) await sleep(started + SECONDS * 1000 - performance.now());
    } finally {
      clearInterval(timer);
    }
    const wallS = (performance.now() - started) / 1000;
    const endedAt = Date.now();
    const fps = ((await page.evaluate("globalThis.__fps")) as number[]).slice().sort((a, b) => a - b);
    const longestTaskMs = Number(await page.evaluate("globalThis.__longestTaskMs"));
    const receivedAtEnd = (await receivedOnPage(page)) - receivedBefore;
    const benchCpu = process.cpuUsage(cpu0.bench);
    const cpu = {
      server: (server.cpuMs() - cpu0.server) / 10 / wallS,
      bench: (benchCpu.user + benchCpu.system) / 1e4 / wallS,
      machine: (machineBusyMs() - cpu0.machine) / 10 / wallS,
    };
    // Calls still answering, then the events still on their way to the page.
    for (let waited = 0; done + failed < sent && waited < 10_000; waited += 100) await sleep(100);
    let received = await receivedOnPage(page);
    for (let waited = 0; waited < 10_000; waited += 500) {
      await sleep(500);
      const now = await receivedOnPage(page);
      if (now === received && now - receivedBefore >= done * perCall) break;
      received = now;
    }
    const heapEndGc = await heapMiB(cdp, true);
    const loopMs = readFileSync(loopFile, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { at: number; maxMs: number })
      .filter((s) => s.at > startedAt + 1000 && s.at <= endedAt)
      .map((s) => s.maxMs)
      .sort((a, b) => a - b);
    return {
      wallS,
      perCall,
      done,
      events: done * perCall,
      failed,
      skipped: slots - sent,
      receivedAtEnd,
      received: received - receivedBefore,
      fps,
      longestTaskMs,
      heapStart,
      heapMiddle: heap[Math.floor((heap.length - 1) / 2)],
      heapEnd: heap.at(-1),
      heapPeak: Math.max(...heap.map((h) => h.mib)),
      heapEndGc,
      loopMaxMs: loopMs.at(-1) ?? Number.NaN,
      loopP50Ms: percentile(loopMs, 50),
      cpu,
    };
  } finally {
    await context.close();
  }
}

const cores = availableParallelism();
console.log(
  `machine: ${cores} cores (${cpus()[0]?.model.trim() ?? "?"}), load average ${loadavg()[0]?.toFixed(1)}; ` +
    "this process (load), the server and Chromium share it",
);
const runtime = await prepareWayfind(ROOT);
// dist/'s freshness check does not cover console/: bundle it, so the console measured is the one on disk.
const bundleKiB = (await buildConsole()) / 1024;
const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-console-"));
const loopFile = join(dir, "loop.jsonl");
let server: ServerProcess | undefined;
let browser: Browser | undefined;
try {
  server = await spawnServer(
    [`--import=${LOOP_METER}`, ...wayfindServeArgs(join(ROOT, "demo/wayfind.yaml"), join(dir, "data"))],
    { logFile: join(dir, "serve.log"), env: { BENCH_LOOP_FILE: loopFile } },
  );
  const baseUrl = `http://127.0.0.1:${server.port}`;
  console.log(`server: wayfind serve (${runtime}), demo config, loopback, no auth; ${baseUrl}`);
  console.log(`console: dist/console/app.js ${bundleKiB.toFixed(1)} KiB gzipped, rebuilt from console/src`);
  browser = await launchChromium();
  console.log(
    `browser: Chromium ${browser.version()} headless, viewport ${VIEWPORT.width}×${VIEWPORT.height}`,
  );

  const warmUp = await firstLoad(browser, baseUrl);
  const loads: number[] = [];
  for (let i = 0; i < LOADS; i++) loads.push(await firstLoad(browser, baseUrl));
  loads.sort((a, b) => a - b);
  console.log(`\nfirst load: /console to the first Overview chart drawn, ${LOADS} cold contexts (ms)`);
  printAligned(
    ["p50", "p99", "max", "target", "warm-up load (not counted)"],
    [[f0(percentile(loads, 50)), f0(percentile(loads, 99)), f0(loads.at(-1) ?? 0), "≤ 1000", f0(warmUp)]],
    new Set([0, 1, 2, 3, 4]),
  );
  console.log(`(p99 of ${LOADS} loads is their slowest, nearest rank)`);

  const r = await liveEvents(browser, server, baseUrl, loopFile);
  console.log(
    `\nLive events page, ${RATE} events/s asked for ${SECONDS} s (ActivateTools over gRPC, ${r.perCall} events a call, ${TICK_MS} ms ticks)`,
  );
  printAligned(
    ["", "value"],
    [
      ["events sent/s (events of calls answered OK / wall s)", f0(r.events / r.wallS)],
      ["calls answered OK / failed / not sent (backlog)", `${r.done} / ${r.failed} / ${r.skipped}`],
      ["events the page counted, at the end of the load", String(r.receivedAtEnd)],
      ["events the page counted, after it drained", String(r.received)],
      [
        "page fps per 1 s window: min / p5 / p50 (target ≥ 30)",
        `${f1(r.fps[0] ?? 0)} / ${f1(percentile(r.fps, 5))} / ${f1(percentile(r.fps, 50))}`,
      ],
      ["one-second windows measured", String(r.fps.length)],
      ["longest main-thread task in the page (ms)", f0(r.longestTaskMs)],
      ["page JS heap at start, after a GC (MiB)", f1(r.heapStart)],
      [`page JS heap at ${r.heapMiddle?.atS ?? "?"} s (MiB)`, f1(r.heapMiddle?.mib ?? Number.NaN)],
      [`page JS heap at ${r.heapEnd?.atS ?? "?"} s, the end (MiB)`, f1(r.heapEnd?.mib ?? Number.NaN)],
      ["page JS heap, peak of the 5 s samples (MiB)", f1(r.heapPeak)],
      ["page JS heap at the end, after a GC (MiB)", f1(r.heapEndGc)],
      [
        "server event-loop delay: worst 1 s window / median window (ms)",
        `${f0(r.loopMaxMs)} / ${f0(r.loopP50Ms)}`,
      ],
      [
        "CPU, % of one core: server / this process / whole machine",
        `${f0(r.cpu.server)} / ${f0(r.cpu.bench)} / ${f0(r.cpu.machine)} (of ${cores * 100})`,
      ],
    ],
    new Set([1]),
  );
  console.log("(Chromium's CPU is the machine's minus the server's and this process's, roughly)");
} finally {
  await browser?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}
