/**
 * Prompt size and prefix stability of RenderToolPrompt on the shared MCP catalog (309 tools).
 * (a) every tool visible (tool_search disabled) vs (b) deferred with a 5-tool core;
 * then 10 activations one by one: how much of each render survives as the next one's byte prefix.
 * Usage: node --import tsx bench/prompt-size.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CallerAccess, createAccessControl } from "../src/access/index.ts";
import { ActivationStore, activateVisible, activationMigrations } from "../src/activation/index.ts";
import { ANONYMOUS_CALLER, type Caller } from "../src/caller/caller.ts";
import { openDatabase } from "../src/database/sqlite.ts";
import {
  discoveryMigrations,
  IndexHost,
  parseCatalogFile,
  type Tool,
  ToolRegistry,
  type ToolView,
} from "../src/discovery/index.ts";
import { type RenderToolPromptRequest, renderToolPrompt } from "../src/prompt/index.ts";

const DATA = new URL("../data/eval", import.meta.url).pathname;
const CORE = [
  "filesystem.read_file",
  "filesystem.search_files",
  "github.search_repositories",
  "memory.search_nodes",
  "brave_search.brave_web_search",
];
const ACTIVATE = [
  "github.create_issue",
  "github.list_pull_requests",
  "slack.slack_post_message",
  "kubernetes.kubectl_get",
  "playwright.browser_navigate",
  "notion.API-post-search",
  "mongodb.find",
  "supabase.execute_sql",
  "firecrawl.firecrawl_scrape",
  "gitlab.create_issue",
];

const dir = mkdtempSync(join(tmpdir(), "wayfind-prompt-bench-"));
try {
  const db = openDatabase(join(dir, "wayfind.db"), [...discoveryMigrations, ...activationMigrations]);
  const registry = new ToolRegistry(db);
  const index = new IndexHost(registry);
  await registry.register("mcp", parseCatalogFile(join(DATA, "mcp_catalog.jsonl")).tools);
  const names = [...registry.all()].map((t) => t.name).sort();
  const tools: Tool[] = [];
  for (const name of names) tools.push(...registry.lookup(name, "").slice(0, 1));

  const who: Caller = { ...ANONYMOUS_CALLER, tenantId: "bench", sessionId: "s", runId: "r" };
  const access: CallerAccess = createAccessControl({
    policy: { allowed: ["*"], denied: [], requireTags: [] },
    visibility: [],
    toolSearch: { alwaysLoadedPatterns: CORE },
  }).forCaller(who);
  const base = (overrides: Partial<RenderToolPromptRequest>) =>
    renderToolPrompt({
      caller: who,
      access,
      tools,
      activeNames: [],
      toolSearch: { enabled: true },
      ...overrides,
    });

  const timed = <T>(f: () => T): [T, number] => {
    const started = performance.now();
    const out = f();
    return [out, performance.now() - started];
  };
  const [all, allMs] = timed(() => base({ toolSearch: { enabled: false } }));
  const [deferred, deferredMs] = timed(() => base({}));
  const built = await index.ready();
  // The caller's view, as ToolService makes it for hints: its deferred tools, not those shown already.
  const view: ToolView = {
    index: built,
    tenant: who.tenantId,
    access: access.verdicts(built.docs),
    activeNames: [],
    allShown: false,
  };
  const hintSearch = (query: string, limit: number) =>
    index.search({ query, limit, view }).tools.map((t) => t.name);
  const [withExtras, extrasMs] = timed(() =>
    base({
      directory: { maxEntries: 20 },
      hints: { message: "open a pull request on github", search: hintSearch },
    }),
  );
  const saving = (n: number) => `${(100 * (1 - n / all.tokenEstimate)).toFixed(1)} %`;

  console.log(`catalog: ${tools.length} tools; core (always visible): ${CORE.length}\n`);
  console.log(
    table([
      ["render", "shown", "chars", "tokens (est.)", "saving vs (a)", "render ms"],
      [
        "(a) all visible (tool_search off)",
        all.visibleTools.length,
        all.text.length,
        all.tokenEstimate,
        "—",
        allMs,
      ],
      [
        "(b) deferred, 5-tool core",
        deferred.visibleTools.length,
        deferred.text.length,
        deferred.tokenEstimate,
        saving(deferred.tokenEstimate),
        deferredMs,
      ],
      [
        "(b) + directory(20) + 3 hints",
        withExtras.visibleTools.length,
        withExtras.text.length,
        withExtras.tokenEstimate,
        saving(withExtras.tokenEstimate),
        extrasMs,
      ],
    ]),
  );

  // Prefix stability: activate one tool at a time through access control and re-render.
  const store = new ActivationStore(db, { runActivationTtlSeconds: 3600 });
  const resolve = (name: string) =>
    registry.lookup(name, who.tenantId).find((tool) => access.canActivate(tool));
  const rows: (string | number)[][] = [
    ["step", "activated", "tokens", "prefix kept (plain)", "stable prefix kept (with hints)"],
  ];
  let previous = base({ activeNames: store.activeFor(who) });
  let previousHinted = base({
    activeNames: store.activeFor(who),
    hints: { message: "deploy", search: hintSearch },
  });
  let worst = 1;
  let worstStable = 1;
  for (const [i, name] of ACTIVATE.entries()) {
    const result = await activateVisible({ store, access, resolve }, who, [name], {
      scope: "run",
      source: "explicit",
      reason: "bench",
    });
    if (result.activated.length !== 1) throw new Error(`bench tool ${name} was not activated`);
    const next = base({ activeNames: store.activeFor(who) });
    const nextHinted = base({
      activeNames: store.activeFor(who),
      hints: { message: "deploy", search: hintSearch },
    });
    const share = commonPrefix(previous.text, next.text) / previous.text.length;
    const stable = previousHinted.text.slice(0, previousHinted.stablePrefixLength);
    const stableShare = commonPrefix(stable, nextHinted.text) / stable.length;
    worst = Math.min(worst, share);
    worstStable = Math.min(worstStable, stableShare);
    rows.push([i + 1, name, next.tokenEstimate, pct(share), pct(stableShare)]);
    previous = next;
    previousHinted = nextHinted;
  }
  console.log(
    `\nprefix stability over ${ACTIVATE.length} activations (share of the previous render that is a byte prefix of the next):\n`,
  );
  console.log(table(rows));
  console.log(
    `\nworst step: ${pct(worst)} plain, ${pct(worstStable)} of the stable prefix with hints (target 100 %)`,
  );
  console.log(`token saving of (b): ${saving(deferred.tokenEstimate)} (target ≥ 90 %)`);
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)} %`;
}

function table(rows: readonly (readonly (string | number)[])[]): string {
  const cells = rows.map((r) =>
    r.map((c) => (typeof c === "number" ? (Number.isInteger(c) ? String(c) : c.toFixed(2)) : c)),
  );
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length))) ?? [];
  return cells.map((r) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`).join("\n");
}
