export { parseCatalogFile } from "./files.ts";
export { IndexHost, type IndexHostOptions } from "./index-host.ts";
export { type RegistryOptions, ToolRegistry } from "./registry.ts";
export { discoveryMigrations } from "./schema.ts";
export { isLargeSchema, largeSchemaArgumentProblems } from "./schema-checks.ts";
export * from "./types.ts";
export { type ArgumentProblem, argumentChecker } from "./validate.ts";
