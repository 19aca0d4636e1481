export { type CatalogOptions, ToolCatalog } from "./catalog.ts";
export {
  type CatalogFileOptions,
  type CatalogFormat,
  type ParsedCatalog,
  parseCatalogFile,
} from "./files.ts";
export type { Candidates, RankerConfig } from "./ranker.ts";
export { discoveryMigrations } from "./schema.ts";
export { isLargeSchema, largeSchemaArgumentProblems } from "./schema-checks.ts";
export * from "./types.ts";
export { type ArgumentProblem, argumentChecker } from "./validate.ts";
