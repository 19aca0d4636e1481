export { applySecurityFlags, type SecurityFlags } from "./auth.ts";
export { DEFAULTS } from "./defaults.ts";
export { ConfigError } from "./errors.ts";
export {
  applyCliOverrides,
  type ConfigOverrides,
  defaultConfig,
  loadConfig,
  missingSourceFiles,
} from "./load.ts";
export type * from "./types.ts";
