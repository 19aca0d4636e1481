export {
  type SchemaBudgetReport,
  schemaBudgetReport,
} from "./budget.ts";
export { toGeminiSchema } from "./gemini-schema.ts";
export type { JsonObject } from "./json.ts";

export {
  PAYLOAD_PROVIDERS,
  type PayloadProvider,
  type PayloadTool,
  type RenderedToolPayload,
  renderToolPayload,
} from "./tool-payload.ts";
