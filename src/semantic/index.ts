// Semantic ranking (issue 14): a local sentence-embedding model run in a worker thread, tool vectors
// persisted per model and record hash, a cosine top-k scan, and their fusion into tool search.
export { Embedder } from "./embedder.ts";
export { SemanticSkillSearch } from "./skill-search.ts";
export { toolEmbeddingText } from "./text.ts";
export { SemanticToolSearch } from "./tool-search.ts";
export {
  semanticMigrations,
  TextVectors,
} from "./vectors.ts";
