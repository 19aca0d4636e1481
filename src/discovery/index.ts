export { type CatalogOptions, ToolCatalog } from "./catalog.ts";
export {
  type CatalogFileOptions,
  type CatalogFormat,
  type ParsedCatalog,
  parseCatalogFile,
  parseCatalogText,
  toToolInput,
} from "./files.ts";
export { DEFAULT_RANKER, type RankerConfig } from "./ranker.ts";
export { discoveryMigrations } from "./schema.ts";
export type { VisibleSet } from "./search-index.ts";
export { bareName, nameKey } from "./text.ts";
export * from "./types.ts";
export { LIMITS as TOOL_LIMITS } from "./validate.ts";
