import type { z } from "zod";
import { ConfigError } from "./errors.ts";
import { resolvePath } from "./paths.ts";
import { describeIssue } from "./problems.ts";
import {
  dataDir as dataDirSchema,
  host as hostSchema,
  logLevel as logLevelSchema,
  maxMessageBytes as maxMessageBytesSchema,
  port as portSchema,
  postgresUrl,
} from "./schema.ts";
import { postgresConfig } from "./sections.ts";
import type { WayfindConfig } from "./types.ts";

// What the environment and `wayfind serve`'s flags override of the file (environment > file >
// defaults; flags on top of all), each value checked as its YAML key would be.

/** The process environment, or a test's. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Values that the environment or the command line may override; strings are parsed as the YAML value would be. */
export interface ConfigOverrides {
  readonly host?: string | undefined;
  readonly port?: string | number | undefined;
  readonly dataDir?: string | undefined;
  readonly logLevel?: string | undefined;
  readonly maxMessageBytes?: string | number | undefined;
}

const ENV_NAMES = {
  host: "WAYFIND_HOST",
  port: "WAYFIND_PORT",
  dataDir: "WAYFIND_DATA_DIR",
  logLevel: "WAYFIND_LOG_LEVEL",
  maxMessageBytes: "WAYFIND_MAX_MESSAGE_BYTES",
} as const;

const FLAG_NAMES = {
  host: "--host",
  port: "--port",
  dataDir: "--data-dir",
  logLevel: "--log-level",
  maxMessageBytes: "--max-message-bytes",
} as const;

/**
 * Applies `wayfind serve` flags on top of a loaded config (flags win over environment and file),
 * validated like the YAML keys; a relative --data-dir resolves against the working directory.
 * Throws a ConfigError naming the flag.
 */
export function applyCliOverrides(config: WayfindConfig, flags: ConfigOverrides): WayfindConfig {
  const problems: string[] = [];
  const result = applyOverrides(config, flags, "command line", FLAG_NAMES, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return result;
}

/** The environment's overrides (WAYFIND_*), on top of the file; problems are added to `problems`. */
export function applyEnv(config: WayfindConfig, env: Env, problems: string[]): WayfindConfig {
  const values = Object.fromEntries(
    Object.entries(ENV_NAMES).map(([key, variable]) => [key, env[variable]]),
  ) as ConfigOverrides;
  return applyDatabaseUrl(applyOverrides(config, values, "environment", ENV_NAMES, problems), env, problems);
}

/** WAYFIND_DATABASE_URL puts the state on PostgreSQL (pool size from the file or the default). */
function applyDatabaseUrl(config: WayfindConfig, env: Env, problems: string[]): WayfindConfig {
  const url = env.WAYFIND_DATABASE_URL?.trim();
  if (!url) return config;
  const parsed = postgresUrl.safeParse(url);
  if (!parsed.success) {
    problems.push(
      "environment: WAYFIND_DATABASE_URL: must be a PostgreSQL URL (postgres://user:password@host:5432/database); " +
        "fix it or unset WAYFIND_DATABASE_URL to keep the state in SQLite",
    );
    return config;
  }
  const postgres = config.storage.postgres ?? postgresConfig(parsed.data, {});
  return { ...config, storage: { postgres: { ...postgres, url: parsed.data } } };
}

/** Each override is validated by the same schema as its YAML key; problems name the variable or flag. */
function applyOverrides(
  config: WayfindConfig,
  values: ConfigOverrides,
  origin: "environment" | "command line",
  names: Readonly<Record<keyof ConfigOverrides, string>>,
  problems: string[],
): WayfindConfig {
  const read = <T>(
    key: keyof ConfigOverrides,
    schema: z.ZodType<T>,
    numeric: boolean,
    fix: string,
  ): T | undefined => {
    const value = values[key];
    const name = names[key];
    // An empty value counts as unset, as shells make `FOO= cmd` easy to write by accident.
    if (value === undefined || String(value).trim() === "") return undefined;
    const text = String(value).trim();
    const candidate: unknown = numeric ? (/^\d+$/.test(text) ? Number(text) : Number.NaN) : text;
    const result = schema.safeParse(candidate);
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    const what =
      Number.isNaN(candidate) || !issue
        ? `must be a whole number, got ${JSON.stringify(String(value))}`
        : describeIssue(issue, candidate).split("; ")[0];
    const unset = origin === "environment" ? ` or unset ${name}` : "";
    problems.push(`${origin}: ${name}: ${what}; ${fix}${unset}`);
    return undefined;
  };
  const host = read("host", hostSchema, false, "set a host name or IP");
  const port = read("port", portSchema, true, "set a whole number from 0 to 65535");
  const dataDir = read("dataDir", dataDirSchema, false, "set a directory path");
  const level = read("logLevel", logLevelSchema, false, `set one of ${logLevelSchema.options.join(", ")}`);
  const maxMessageBytes = read(
    "maxMessageBytes",
    maxMessageBytesSchema,
    true,
    "set a whole number of bytes from 1024 to 1073741824",
  );
  return {
    ...config,
    server: {
      ...config.server,
      host: host ?? config.server.host,
      port: port ?? config.server.port,
      // Relative to the working directory: environment and flags belong to the process, not the file.
      dataDir: dataDir === undefined ? config.server.dataDir : resolvePath(process.cwd(), dataDir),
      maxMessageBytes: maxMessageBytes ?? config.server.maxMessageBytes,
    },
    logging: { level: level ?? config.logging.level },
  };
}
