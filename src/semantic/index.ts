// Semantic ranking (issue 14): a local sentence-embedding model run in a worker thread, tool vectors
// persisted per model and record hash, a cosine top-k scan, and their fusion into tool search.
export { Embedder, QUERY_CACHE_SIZE, type TextEmbedder } from "./embedder.ts";
export { MODEL_FILES, ModelFolderError } from "./model.ts";
export { CosineScan, type ScoredDoc } from "./scan.ts";
export { SemanticSkillSearch, type SkillText } from "./skill-search.ts";
export { toolEmbeddingText } from "./text.ts";
export { SemanticToolSearch } from "./tool-search.ts";
export {
  type PackedVectors,
  type SyncReport,
  semanticMigrations,
  TextVectors,
  type ToolKey,
  type ToolText,
} from "./vectors.ts";
