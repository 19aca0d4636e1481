/**
 * What a POST to `/mcp` must hold before a session sees it: JSON-RPC 2.0 messages whose requests'
 * params fit their method. The SDK would otherwise answer a body that is no message at all as a
 * parse error, and invalid params of a method as an internal error with its validator's dump;
 * JSON-RPC says Invalid Request (-32600) and Invalid params (-32602).
 */
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** A JSON-RPC error answered for the message (or the batch) before any session sees it. */
export interface MessageProblem {
  readonly code: number;
  readonly message: string;
  /** The id of the request at fault; null when the body as a whole is. */
  readonly id: string | number | null;
}

/** The request schema of each method the endpoint serves; others go to the SDK as they are. */
const REQUEST_SCHEMAS: ReadonlyMap<string, { safeParse(value: unknown): ParseResult }> = new Map<
  string,
  { safeParse(value: unknown): ParseResult }
>([
  ["initialize", InitializeRequestSchema],
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tools/call", CallToolRequestSchema],
  ["prompts/list", ListPromptsRequestSchema],
  ["prompts/get", GetPromptRequestSchema],
  ["resources/list", ListResourcesRequestSchema],
  ["resources/read", ReadResourceRequestSchema],
  ["resources/templates/list", ListResourceTemplatesRequestSchema],
  ["resources/subscribe", SubscribeRequestSchema],
  ["resources/unsubscribe", UnsubscribeRequestSchema],
  ["completion/complete", CompleteRequestSchema],
  ["logging/setLevel", SetLevelRequestSchema],
]);

type ParseResult =
  | { success: true }
  | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } };

/** Problems named in an answer: enough to fix the request, never the whole validator dump. */
const NAMED_ISSUES = 3;

/** What is wrong with a POST body (parsed JSON), or undefined when every message may go on. */
export function messageProblem(body: unknown): MessageProblem | undefined {
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0)
    return invalidRequest("the body is an empty batch: send a JSON-RPC message or a batch of them");
  for (const message of messages) {
    if (message === null || typeof message !== "object" || Array.isArray(message))
      return invalidRequest("the body must be a JSON-RPC message (an object) or a batch (an array) of them");
    if (!JSONRPCMessageSchema.safeParse(message).success)
      return invalidRequest(
        'a message is not JSON-RPC 2.0: it needs "jsonrpc": "2.0" and a method (with an id for a request), or an id and a result or error',
      );
    const { method, id } = message as { method?: unknown; id?: unknown };
    const schema = typeof method === "string" ? REQUEST_SCHEMAS.get(method) : undefined;
    const parsed = schema?.safeParse(message);
    if (parsed === undefined || parsed.success) continue;
    const issues = parsed.error.issues.slice(0, NAMED_ISSUES).map((issue) => {
      const path = issue.path.map(String).join(".");
      return `${path || "the request"}: ${issue.message}`;
    });
    return {
      code: ErrorCode.InvalidParams,
      message: `Invalid params of ${method}: ${issues.join("; ")}`,
      id: Array.isArray(body) || (typeof id !== "string" && typeof id !== "number") ? null : id,
    };
  }
  return undefined;
}

function invalidRequest(why: string): MessageProblem {
  return { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${why}`, id: null };
}
