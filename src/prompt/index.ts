export { type RenderExamplesOptions, renderExamples } from "./examples.ts";
export {
  type HintSearch,
  type RenderedToolPrompt,
  type RenderToolPromptRequest,
  renderToolCatalog,
  renderToolPrompt,
} from "./prompt.ts";
export { schemaSignature } from "./signature.ts";
