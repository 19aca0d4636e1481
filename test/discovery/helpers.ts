import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import {
  discoveryMigrations,
  IndexHost,
  type IndexHostOptions,
  type RegistryOptions,
  type SearchIndex,
  type Tool,
  type ToolInput,
  ToolRegistry,
  type ToolView,
  VERDICT,
} from "../../src/discovery/index.ts";
import type { NewEvent } from "../../src/events/event.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()?.();
});

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-discovery-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A registry and the index host over it, as the server wires them (src/server/app.ts). */
export interface Catalog {
  readonly registry: ToolRegistry;
  readonly index: IndexHost;
}

export type CatalogOptions = RegistryOptions & IndexHostOptions;

/** The catalog over `db`, with the options each part takes. */
export function catalogOn(db: Db, options: CatalogOptions = {}): Catalog {
  const registry = new ToolRegistry(db, { aliases: options.aliases, writer: options.writer });
  return { registry, index: new IndexHost(registry, options) };
}

/**
 * A caller's view of `built` (a build IndexHost.ready gave), with the access verdict src/access
 * would give: `isVisible` decides what it may activate, loading mode `always` what its prompt shows.
 * Default: a tenant-less caller who may see every tool.
 */
export function viewOf(
  built: SearchIndex,
  view: { readonly tenant?: string; readonly isVisible?: (tool: Tool) => boolean } = {},
): ToolView {
  const isVisible = view.isVisible ?? (() => true);
  return {
    index: built,
    tenant: view.tenant ?? "",
    access: Uint8Array.from(built.docs, (tool) =>
      isVisible(tool) ? VERDICT.canActivate | (tool.loadingMode === "always" ? VERDICT.alwaysVisible : 0) : 0,
    ),
    activeNames: [],
    allShown: false,
  };
}

export interface Opened {
  readonly catalog: Catalog;
  readonly db: Db;
  readonly file: string;
  readonly events: NewEvent[];
}

/** A catalog on a real SQLite file in a temp dir (closed after the test). */
export function openCatalog(options: CatalogOptions = {}, file = join(tempDir(), "wayfind.db")): Opened {
  const db = openDatabase(file, discoveryMigrations);
  cleanups.push(() => {
    if (db.open) db.close();
  });
  const events: NewEvent[] = [];
  const catalog = catalogOn(db, { events: { emit: (e) => events.push(e) }, ...options });
  return { catalog, db, file, events };
}

export const TOOLS: ToolInput[] = [
  {
    name: "get_weather",
    namespace: "weather",
    description: "Get the current weather forecast for a city",
    tags: ["forecast"],
    sideEffects: "read",
    argsSchema: {
      type: "object",
      properties: { city: { type: "string", description: "City name" } },
      required: ["city"],
    },
    examples: [{ args: { city: "Paris" }, description: "weather in Paris", tags: ["minimal"] }],
  },
  {
    name: "send_message",
    namespace: "slack",
    description: "Post a chat message to a channel",
    sideEffects: "external",
  },
  {
    name: "list_pods",
    namespace: "kubernetes",
    description: "List pods in a Kubernetes namespace",
    sideEffects: "read",
  },
  {
    name: "ping",
    namespace: "kubernetes",
    description: "Check the Kubernetes API server is reachable",
    sideEffects: "read",
  },
  {
    name: "take_screenshot",
    namespace: "browser",
    description: "Capture a screenshot of the current page",
    sideEffects: "read",
  },
  {
    name: "createIssue",
    namespace: "github",
    description: "Open a new issue in a repository",
    sideEffects: "write",
  },
];

export async function seeded(options: CatalogOptions = {}): Promise<Opened> {
  const opened = openCatalog(options);
  await opened.catalog.registry.register("test", TOOLS);
  return opened;
}

export function names(result: { tools: readonly { name: string }[] }): string[] {
  return result.tools.map((t) => t.name);
}
