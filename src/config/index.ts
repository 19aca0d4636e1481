export { applySecurityFlags } from "./auth.ts";
export { DEFAULTS } from "./defaults.ts";
export { ConfigError } from "./errors.ts";
export { configPlaces, defaultConfig, loadConfig, missingSourceFiles } from "./load.ts";
export { applyCliOverrides } from "./overrides.ts";
export type * from "./types.ts";
