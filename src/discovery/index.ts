export { type CatalogOptions, ToolCatalog } from "./catalog.ts";
export { parseCatalogFile } from "./files.ts";
export type { Candidates } from "./ranker.ts";
export { discoveryMigrations } from "./schema.ts";
export { isLargeSchema, largeSchemaArgumentProblems } from "./schema-checks.ts";
export * from "./types.ts";
export { type ArgumentProblem, argumentChecker } from "./validate.ts";
