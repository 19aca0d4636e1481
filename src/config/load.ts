import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { credentialFiles } from "./credential-files.ts";
import { ConfigError } from "./errors.ts";
import { applyEnv, type Env } from "./overrides.ts";
import { expandHome } from "./paths.ts";
import { formatPath, locate, type Path, parseConfigText } from "./problems.ts";
import { toConfig } from "./sections.ts";
import type { WayfindConfig } from "./types.ts";

/** The configuration used when no file is given: every default, data dir under the working directory. */
export function defaultConfig(): WayfindConfig {
  return toConfig({}, process.cwd(), undefined);
}

/**
 * Reads and validates a YAML config file (docs/design.md §6), then applies environment overrides
 * (WAYFIND_HOST, WAYFIND_PORT, WAYFIND_DATA_DIR, WAYFIND_LOG_LEVEL, WAYFIND_MAX_MESSAGE_BYTES,
 * WAYFIND_DATABASE_URL).
 * Precedence: environment > file > defaults; CLI flags are applied on top by the caller.
 * Throws one ConfigError listing every problem.
 */
export function loadConfig(file?: string, env: Env = process.env): WayfindConfig {
  const problems: string[] = [];
  let config = defaultConfig();
  if (file !== undefined) {
    const absolute = resolve(expandHome(file));
    let text: string;
    try {
      text = readFileSync(absolute, "utf8");
    } catch (err) {
      const why = err instanceof Error && "code" in err && err.code === "ENOENT" ? "not found" : String(err);
      throw new ConfigError([`${file}: cannot read the config file (${why}); check the --config path`]);
    }
    const parsed = parseConfigText(text, file);
    if (parsed.problems.length > 0) problems.push(...parsed.problems);
    else if (parsed.value) config = toConfig(parsed.value, dirname(absolute), absolute);
  }
  const overridden = applyEnv(config, env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return overridden;
}

/**
 * The catalog files, skill pack folders, credential files and model folder the config names that do
 * not exist, each as a problem with the config file, line and key (serve checks this before it creates or loads anything; the
 * config alone stays loadable without them, e.g. for `catalog stats` on another machine's config).
 */

export function missingSourceFiles(config: WayfindConfig): string[] {
  const missing = [
    ...config.catalogs.map((c, i) => ({
      path: ["catalogs", i, "path"],
      resolved: c.path,
      what: "catalog file",
    })),
    ...config.skillPacks.map((p, i) => ({
      path: ["skill_packs", i, "path"],
      resolved: p.path,
      what: "skill pack",
    })),
    ...credentialFiles(config),
    ...(config.toolSearch.semantic.enabled
      ? [
          {
            path: ["tool_search", "semantic", "model_dir"],
            resolved: config.toolSearch.semantic.modelDir,
            what: "model folder",
          },
        ]
      : []),
  ].filter((entry) => !existsSync(entry.resolved));
  if (missing.length === 0) return [];
  const place = configPlaces(config.configFile);
  return missing.map(
    ({ path, resolved, what }) =>
      `${place(path)}: no ${what} at ${resolved}; fix the path (relative paths start at the config file's folder)`,
  );
}

/**
 * Names a key of the config as its problems do: `file:line:col: key.path` (the file alone where the
 * config came from no file, or the key is not written in it).
 */
export function configPlaces(configFile: string | undefined): (path: Path) => string {
  if (!configFile) return (path) => `config: ${formatPath(path)}`;
  const lineCounter = new LineCounter();
  const doc = parseDocument(readFileSync(configFile, "utf8"), { lineCounter });
  return (path) => {
    const pos = locate(doc, lineCounter, path);
    return `${pos ? `${configFile}:${pos.line}:${pos.col}` : configFile}: ${formatPath(path)}`;
  };
}
