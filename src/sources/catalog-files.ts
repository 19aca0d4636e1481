import { basename } from "node:path";
import type { Logger } from "pino";
import { compileGlobs } from "../access/index.ts";
import { type CatalogConfig, configPlaces, type ToolSourceOptions } from "../config/index.ts";
import { parseCatalogFile, type ToolExample, type ToolInput, type ToolRegistry } from "../discovery/index.ts";
import { WayfindError } from "../errors.ts";

/** Source id of a configured catalog file: its namespace, else its file name. */
export function catalogSourceId(catalog: CatalogConfig): string {
  return `catalog:${catalog.namespace ?? basename(catalog.path)}`;
}

/**
 * Registers every configured catalog file, replacing what each source registered before, so a
 * tool deleted from a file disappears on the next start. A file with any error fails the start:
 * a wrong catalog never yields a half-working server.
 */
export async function syncCatalogFiles(
  registry: ToolRegistry,
  catalogs: readonly CatalogConfig[],
  logger: Logger,
  configFile?: string,
): Promise<void> {
  for (const [index, config] of catalogs.entries()) {
    const parsed = parseCatalogFile(config.path, {
      namespace: config.namespace,
      loadingMode: config.loadingMode,
      invalidSchemas: config.invalidSchemas,
    });
    for (const note of parsed.notes) logger.warn({ catalog: config.path }, note);
    const tools = applySourceOptions(parsed.tools, config, config.namespace);
    const result = await registry
      .register(catalogSourceId(config), tools, { replaceSource: true })
      .catch((error: unknown) => {
        // A tool's check fails with the tool's name alone: say where it was written, the config's
        // examples for the catalog or the file itself.
        if (!(error instanceof WayfindError)) throw error;
        const place =
          Object.keys(config.examples).length > 0
            ? configPlaces(configFile)(["catalogs", index, "examples"])
            : config.path;
        throw new WayfindError(error.code, `${place}: ${error.message}`, error.details);
      });
    // The file's own fingerprint (the result's is every global tool's), so a changed file shows.
    const fingerprint = registry.sourceFingerprint(catalogSourceId(config));
    logger.info(
      { catalog: config.path, tools: parsed.tools.length, ...result, fingerprint },
      "catalog loaded",
    );
  }
}

/**
 * Per-source overrides shared by catalog files and MCP servers: `always_loaded` beats `deferred`
 * beats the tool's own mode; override examples replace the tool's own; source tags are added.
 */
export function applySourceOptions(
  tools: readonly ToolInput[],
  options: ToolSourceOptions,
  namespace: string | undefined,
): ToolInput[] {
  const alwaysLoaded = compileGlobs(options.alwaysLoaded);
  const deferred = compileGlobs(options.deferred);
  return tools.map((tool) => {
    const fullName = qualifiedName(tool, namespace);
    const loadingMode = alwaysLoaded(fullName)
      ? "always"
      : deferred(fullName)
        ? "deferred"
        : tool.loadingMode;
    // Config examples come from YAML, so their args are JSON values.
    const examples = (options.examples[fullName] ?? options.examples[tool.name]) as
      | readonly ToolExample[]
      | undefined;
    return {
      ...tool,
      loadingMode,
      tags: [...new Set([...(tool.tags ?? []), ...options.tags])],
      ...(examples ? { examples } : {}),
    };
  });
}

function qualifiedName(tool: ToolInput, namespace: string | undefined): string {
  const ns = tool.namespace ?? namespace;
  return ns && !tool.name.startsWith(`${ns}.`) ? `${ns}.${tool.name}` : tool.name;
}
