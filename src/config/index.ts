export { applySecurityFlags } from "./auth.ts";
export { DEFAULTS } from "./defaults.ts";
export { ConfigError } from "./errors.ts";
export {
  applyCliOverrides,
  defaultConfig,
  loadConfig,
  missingSourceFiles,
} from "./load.ts";
export type * from "./types.ts";
