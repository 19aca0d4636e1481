/**
 * A small stdio MCP server, the one upstream of bench/mcp-gateways.ts, reached directly, through
 * wayfind and through mcp-proxy alike. Its tools:
 *  - `echo`: answers a short text at once;
 *  - `sample`, `elicit`, `roots`: each asks the client one question while serving the call
 *    (sampling/createMessage, elicitation/create, roots/list) and answers with what it heard.
 * Run: `node --import tsx bench/lib/mcp-stdio-upstream.ts`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const noArguments = { type: "object" as const, properties: {} };
const tools = [
  { name: "echo", description: "Answers a short text at once.", inputSchema: noArguments },
  { name: "sample", description: "Asks the client for one sampling message.", inputSchema: noArguments },
  { name: "elicit", description: "Asks the client's user for one answer.", inputSchema: noArguments },
  { name: "roots", description: "Asks the client for its roots.", inputSchema: noArguments },
];
const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });

const server = new Server({ name: "bench-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  switch (request.params.name) {
    case "echo":
      return text("ok");
    case "sample": {
      const answer = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: "ping" } }], maxTokens: 8 },
        },
        CreateMessageResultSchema,
      );
      return text(answer.content.type === "text" ? answer.content.text : answer.content.type);
    }
    case "elicit": {
      const answer = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: {
            message: "Say ok.",
            requestedSchema: { type: "object", properties: { answer: { type: "string" } } },
          },
        },
        ElicitResultSchema,
      );
      return text(answer.action);
    }
    case "roots": {
      const answer = await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema);
      return text(answer.roots.map((root) => root.uri).join(" "));
    }
    default:
      return { ...text(`unknown tool ${request.params.name}`), isError: true };
  }
});
await server.connect(new StdioServerTransport());
