// Semantic ranking: a local sentence-embedding model run in a worker thread, vectors of
// tools and skills persisted per model and record hash, and each request's evidence by meaning.
export { Embedder } from "./embedder.ts";
export { MeaningMeter } from "./meaning-meter.ts";
export { type SemanticSearch, semanticSkillSearch, semanticToolSearch } from "./meaning-search.ts";
export type { RequestMeaning } from "./request-meaning.ts";
export { toolEmbeddingText, toolTexts } from "./text.ts";
export {
  semanticMigrations,
  TextVectors,
} from "./vectors.ts";
