export { DEFAULTS } from "./defaults.ts";
export { ConfigError } from "./errors.ts";
export {
  applyCliOverrides,
  type ConfigOverrides,
  defaultConfig,
  loadConfig,
} from "./load.ts";
export type * from "./types.ts";
