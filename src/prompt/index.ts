export { renderExamples } from "./examples.ts";
export {
  type RenderedToolPrompt,
  type RenderToolPromptRequest,
  renderToolCatalog,
  renderToolPrompt,
} from "./prompt.ts";
export { schemaSignature } from "./signature.ts";
