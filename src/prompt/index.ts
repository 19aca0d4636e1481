export { compactJson, DEFAULT_MAX_EXAMPLES, type RenderExamplesOptions, renderExamples } from "./examples.ts";
export {
  DEFAULT_DIRECTORY_ENTRIES,
  DEFAULT_HINTS,
  type HintSearch,
  type RenderedToolPrompt,
  type RenderToolPromptRequest,
  renderToolCatalog,
  renderToolPrompt,
} from "./prompt.ts";
export { MAX_SIGNATURE_DEPTH, schemaSignature } from "./signature.ts";
