// Semantic ranking groundwork (issue 14): a local sentence-embedding model run in a worker thread,
// tool vectors persisted per model and record hash, and a cosine top-k scan. Nothing uses it yet.
export { BATCH_SIZE, Embedder, QUERY_CACHE_SIZE, type TextEmbedder } from "./embedder.ts";
export { MODEL_FILES, ModelFolderError } from "./model.ts";
export { CosineScan, type ScoredDoc } from "./scan.ts";
export { toolEmbeddingText } from "./text.ts";
export {
  type PackedVectors,
  type SyncReport,
  semanticMigrations,
  type ToolKey,
  type ToolText,
  ToolVectors,
} from "./vectors.ts";
