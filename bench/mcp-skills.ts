/**
 * Skill Packs over MCP (docs/mcp.md "Skill Packs as the skills extension") at catalog size: `wayfind
 * serve` (a child process, as `npm start` runs it) holding 10,000 skills, asked by 2026-07-28 requests
 * (no session) and by a 2025-11-25 session. Prints, for each question, p50 / p99 latency and
 * throughput with 8 callers at once, and the p99 of a health check made meanwhile (the event loop's
 * stalls):
 *  - `skills/list`, first page (also with one caller alone);
 *  - every page of `skills/list`, one caller walking the whole catalog;
 *  - `resources/read` of a skill's `SKILL.md`, a different skill each time.
 * Run: `node --import tsx bench/mcp-skills.ts [--skills N] [--requests N]`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { printAligned, spawnServer, wayfindServeArgs } from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: { skills: { type: "string", default: "10000" }, requests: { type: "string", default: "2000" } },
});
const SKILLS = Number(values.skills);
const REQUESTS = Number(values.requests);
const CALLERS = 8;
const PACK_FILES = 1_000;

const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-mcp-skills-"));
const config = join(dir, "wayfind.yaml");
writeFileSync(config, stringify({ tool_search: { semantic: { enabled: false } } }));
const wayfind = await spawnServer(wayfindServeArgs(config, join(dir, "data")), {
  logFile: join(dir, "serve.log"),
});
const base = `http://127.0.0.1:${wayfind.port}`;
const tenant = { "wayfind-tenant": "acme" };

/** A skill of the generated catalog: a name, a trigger, three steps. */
function skillFile(i: number): { path: string; content: string } {
  const name = `skill-${String(i).padStart(5, "0")}`;
  return {
    path: `${name}.skill.md`,
    content: `---\nname: ${name}\ntrigger: Work item ${i} needs its ${i % 7 === 0 ? "review" : "rollout"}.\nsteps:\n  - Open item ${i}.\n  - Check its owner and state.\n  - Close it with a note.\n---\n`,
  };
}

async function loadCatalog(): Promise<void> {
  for (let start = 0; start < SKILLS; start += PACK_FILES) {
    const files = Array.from({ length: Math.min(PACK_FILES, SKILLS - start) }, (_, i) =>
      skillFile(start + i),
    );
    const answer = await fetch(`${base}/wayfind.v1.SkillService/LoadSkillPack`, {
      method: "POST",
      headers: { "content-type": "application/json", "wayfind-role": "admin", ...tenant },
      body: JSON.stringify({
        caller: { tenantId: "acme" },
        packName: `bulk${start / PACK_FILES}`,
        scope: "SKILL_SCOPE_TENANT",
        files: { files },
      }),
    });
    if (answer.status !== 200) throw new Error(`LoadSkillPack: ${answer.status} ${await answer.text()}`);
  }
}

/** One 2026-07-28 request (its revision in `_meta`, no session); its JSON answer. */
async function modern(
  method: string,
  params: Record<string, unknown>,
): Promise<{ result?: Record<string, unknown> }> {
  const answer = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(typeof params.uri === "string" ? { "mcp-name": params.uri } : {}),
      ...tenant,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" },
        },
      },
    }),
  });
  const parsed = (await answer.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (parsed.error !== undefined) throw new Error(`${method}: ${JSON.stringify(parsed.error)}`);
  return parsed;
}

/** A 2025-11-25 session: its id, and a request on it. */
async function legacySession(): Promise<
  (method: string, params: Record<string, unknown>) => Promise<unknown>
> {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...tenant,
  };
  const opened = await fetch(`${base}/mcp`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "bench", version: "1" },
      },
    }),
  });
  await opened.text();
  const session = opened.headers.get("mcp-session-id") ?? "";
  const withSession = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
  await (
    await fetch(`${base}/mcp`, {
      method: "POST",
      headers: withSession,
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    })
  ).text();
  return async (method, params) => {
    const answer = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: withSession,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const text = await answer.text();
    if (!text.includes('"result"')) throw new Error(`${method}: ${text.slice(0, 300)}`);
    return text;
  };
}

interface Measured {
  readonly p50: number;
  readonly p99: number;
  readonly perSecond: number;
  readonly healthP99: number;
}

/** `ask` made REQUESTS times by CALLERS callers at once, with a health check every 20 ms meanwhile. */
async function measure(
  ask: (i: number) => Promise<unknown>,
  requests = REQUESTS,
  callers = CALLERS,
): Promise<Measured> {
  const latencies: number[] = [];
  const health: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      const start = performance.now();
      await (await fetch(`${base}/healthz`)).text();
      health.push(performance.now() - start);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < requests) {
        const i = next++;
        const start = performance.now();
        await ask(i);
        latencies.push(performance.now() - start);
      }
    }),
  );
  const elapsed = performance.now() - started;
  running = false;
  await probe;
  latencies.sort((a, b) => a - b);
  health.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    perSecond: (requests / elapsed) * 1000,
    healthP99: percentile(health, 0.99),
  };
}

const row = (what: string, m: Measured): string[] => [
  what,
  m.p50.toFixed(2),
  m.p99.toFixed(2),
  m.perSecond.toFixed(0),
  m.healthP99.toFixed(1),
];

try {
  const loadStart = performance.now();
  await loadCatalog();
  console.log(`${SKILLS} skills loaded in ${((performance.now() - loadStart) / 1000).toFixed(1)} s`);
  const firstPage = await modern("skills/list", {});
  const uris = ((firstPage.result?.skills ?? []) as { uri: string }[]).map((skill) => skill.uri);
  const legacy = await legacySession();
  // Warm both paths before measuring.
  await measure(() => modern("skills/list", {}), 200);
  await measure(() => legacy("skills/list", {}), 200);

  const rows: string[][] = [];
  rows.push(
    row(
      "skills/list first page, 2026-07-28, one caller",
      await measure(() => modern("skills/list", {}), 500, 1),
    ),
  );
  rows.push(row("skills/list first page, 2026-07-28", await measure(() => modern("skills/list", {}))));
  rows.push(
    row("skills/list first page, 2025-11-25 session", await measure(() => legacy("skills/list", {}))),
  );
  rows.push(
    row(
      "resources/read SKILL.md, 2026-07-28",
      await measure((i) => modern("resources/read", { uri: uris[i % uris.length] })),
    ),
  );
  let pages = 0;
  let listed = 0;
  const walk = await measure(
    async () => {
      for (let cursor: string | undefined; ; ) {
        const page = await modern("skills/list", cursor === undefined ? {} : { cursor });
        pages++;
        listed += ((page.result?.skills ?? []) as unknown[]).length;
        cursor = page.result?.nextCursor as string | undefined;
        if (cursor === undefined) break;
      }
    },
    3,
    1,
  );
  rows.push(row(`every page of skills/list, one caller (${pages / 3} pages)`, walk));
  console.log(
    `\nskills over MCP, ${SKILLS} skills, ${CALLERS} callers at once (walk: ${listed / 3} skills a walk)`,
  );
  printAligned(["question", "p50 ms", "p99 ms", "requests/s", "health p99 ms"], rows, new Set([1, 2, 3, 4]));
  const { nowMiB, peakMiB } = wayfind.rss();
  console.log(`server RSS ${nowMiB.toFixed(0)} MiB (peak ${peakMiB.toFixed(0)} MiB)`);
} finally {
  await wayfind.stop();
  rmSync(dir, { recursive: true, force: true });
}
