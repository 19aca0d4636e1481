export {
  type SchemaBudgetOptions,
  type SchemaBudgetReport,
  schemaBudgetReport,
  type ToolBudgetLine,
} from "./budget.ts";
export { toGeminiSchema } from "./gemini-schema.ts";
export type { JsonObject, JsonValue } from "./json.ts";

export {
  PAYLOAD_PROVIDERS,
  type PayloadProvider,
  type PayloadTool,
  type RenderedToolPayload,
  type RenderToolPayloadRequest,
  renderToolPayload,
} from "./tool-payload.ts";
