/**
 * An MCP server with what the official conformance suite's server scenarios ask of a server
 * (@modelcontextprotocol/conformance 0.2.0-alpha.12, its 2025-11-25 reference: the tools `test_*`, prompts, resources,
 * resource templates, completions, subscriptions, logging), written from the scenarios' stated
 * requirements. wayfind fronts it in test/mcp-endpoint/conformance.test.ts, so the suite checks what
 * passes through /mcp; it is a real server on a real port (Streamable HTTP, stateful, resumable).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** A 1×1 PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/** A WAV header of a silent, empty clip. */
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string) => ({ type: "text" as const, text: value });
const noArguments = { type: "object" as const, properties: {} };

const TOOLS = [
  { name: "test_simple_text", description: "Returns simple text.", inputSchema: noArguments },
  { name: "test_image_content", description: "Returns an image.", inputSchema: noArguments },
  { name: "test_audio_content", description: "Returns audio.", inputSchema: noArguments },
  { name: "test_embedded_resource", description: "Returns an embedded resource.", inputSchema: noArguments },
  {
    name: "test_multiple_content_types",
    description: "Returns text, an image and a resource.",
    inputSchema: noArguments,
  },
  {
    name: "test_tool_with_logging",
    description: "Logs three messages while it runs.",
    inputSchema: noArguments,
  },
  { name: "test_error_handling", description: "Always fails.", inputSchema: noArguments },
  {
    name: "test_tool_with_progress",
    description: "Reports progress while it runs.",
    inputSchema: noArguments,
  },
  {
    name: "test_sampling",
    description: "Asks the client's model to complete a prompt.",
    inputSchema: {
      type: "object" as const,
      properties: { prompt: { type: "string" } },
      required: ["prompt"],
    },
  },
  {
    name: "test_elicitation",
    description: "Asks the user for a name and an email address.",
    inputSchema: {
      type: "object" as const,
      properties: { message: { type: "string" } },
      required: ["message"],
    },
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Asks with defaults for every type.",
    inputSchema: noArguments,
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Asks with every kind of enum.",
    inputSchema: noArguments,
  },
  {
    name: "test_reconnection",
    description: "Closes its stream mid-call, then answers.",
    inputSchema: noArguments,
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object" as const,
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, as the suite's schema has it.
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false,
    },
  },
];

const PROMPTS = [
  { name: "test_simple_prompt", description: "A prompt without arguments." },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with two arguments.",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt embedding a resource.",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", description: "A prompt with an image." },
];

const RESOURCES = [
  { uri: "test://static-text", name: "static-text", description: "A text resource.", mimeType: "text/plain" },
  {
    uri: "test://static-binary",
    name: "static-binary",
    description: "A binary resource.",
    mimeType: "image/png",
  },
  {
    uri: "test://watched-resource",
    name: "watched-resource",
    description: "A resource to watch.",
    mimeType: "text/plain",
  },
];

async function callTool(
  name: string,
  args: Record<string, unknown>,
  extra: {
    _meta?: { progressToken?: string | number };
    sendNotification(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
    sendRequest: Server["request"];
    closeSSEStream?: () => void;
  },
): Promise<CallToolResult> {
  switch (name) {
    case "test_simple_text":
      return { content: [text("This is a simple text response for testing.")] };
    case "test_image_content":
      return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
    case "test_audio_content":
      return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
    case "test_embedded_resource":
      return {
        content: [
          {
            type: "resource",
            resource: {
              uri: "test://embedded-resource",
              mimeType: "text/plain",
              text: "This is an embedded resource content.",
            },
          },
        ],
      };
    case "test_multiple_content_types":
      return {
        content: [
          text("Multiple content types test:"),
          { type: "image", data: PNG, mimeType: "image/png" },
          {
            type: "resource",
            resource: {
              uri: "test://mixed-content-resource",
              mimeType: "application/json",
              text: JSON.stringify({ test: "data", value: 123 }),
            },
          },
        ],
      };
    case "test_tool_with_logging":
      for (const [i, data] of [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
      ].entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
      }
      return { content: [text("Tool with logging executed successfully")] };
    case "test_error_handling":
      return { isError: true, content: [text("This tool intentionally returns an error for testing")] };
    case "test_tool_with_progress": {
      const token = extra._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(50);
        if (token !== undefined)
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress, total: 100 },
          });
      }
      return { content: [text(String(token ?? "no progress token"))] };
    }
    case "test_sampling": {
      const result = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: text(String(args.prompt)) }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      const answer = result.content.type === "text" ? result.content.text : JSON.stringify(result.content);
      return { content: [text(`LLM response: ${answer}`)] };
    }
    case "test_elicitation":
    case "test_elicitation_sep1034_defaults":
    case "test_elicitation_sep1330_enums": {
      const result = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: { message: String(args.message ?? "Please answer"), requestedSchema: SCHEMAS[name] },
        },
        ElicitResultSchema,
      );
      return {
        content: [
          text(
            `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`,
          ),
        ],
      };
    }
    case "test_reconnection":
      extra.closeSSEStream?.();
      await sleep(100);
      return { content: [text("Reconnection test completed successfully.")] };
    case "json_schema_2020_12_tool":
      return { content: [text(JSON.stringify(args))] };
  }
  throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
}

const SCHEMAS: Record<string, unknown> = {
  test_elicitation: {
    type: "object",
    properties: {
      username: { type: "string", description: "User's response" },
      email: { type: "string", description: "User's email address" },
    },
    required: ["username", "email"],
  },
  test_elicitation_sep1034_defaults: {
    type: "object",
    properties: {
      name: { type: "string", default: "John Doe" },
      age: { type: "integer", default: 30 },
      score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
      verified: { type: "boolean", default: true },
    },
  },
  test_elicitation_sep1330_enums: {
    type: "object",
    properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: {
        type: "string",
        oneOf: [
          { const: "value1", title: "First Option" },
          { const: "value2", title: "Second Option" },
          { const: "value3", title: "Third Option" },
        ],
      },
      legacyEnum: {
        type: "string",
        enum: ["opt1", "opt2", "opt3"],
        enumNames: ["Option One", "Option Two", "Option Three"],
      },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: {
        type: "array",
        items: {
          anyOf: [
            { const: "value1", title: "First Choice" },
            { const: "value2", title: "Second Choice" },
            { const: "value3", title: "Third Choice" },
          ],
        },
      },
    },
  },
};

function getPrompt(name: string, args: Record<string, string>) {
  switch (name) {
    case "test_simple_prompt":
      return { messages: [{ role: "user", content: text("This is a simple prompt for testing.") }] };
    case "test_prompt_with_arguments":
      return {
        messages: [
          { role: "user", content: text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`) },
        ],
      };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          {
            role: "user",
            content: {
              type: "resource",
              resource: {
                uri: args.resourceUri,
                mimeType: "text/plain",
                text: "Embedded resource content for testing.",
              },
            },
          },
          { role: "user", content: text("Please process the embedded resource above.") },
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
          { role: "user", content: text("Please analyze the image above.") },
        ],
      };
  }
  throw new McpError(ErrorCode.InvalidParams, `Prompt ${name} not found`);
}

function readResource(uri: string) {
  if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
  const listed = RESOURCES.find((resource) => resource.uri === uri);
  if (listed)
    return {
      contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }],
    };
  const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1];
  if (id !== undefined)
    return {
      contents: [
        {
          uri,
          mimeType: "application/json",
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    };
  throw new McpError(-32002, `Resource ${uri} not found`);
}

function referenceServer(): Server {
  const server = new Server(
    { name: "conformance-reference", version: "1.0.0" },
    {
      capabilities: {
        tools: {},
        prompts: {},
        resources: { subscribe: true },
        logging: {},
        completions: {},
      },
    },
  );
  const subscribed = new Set<string>();
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    callTool(request.params.name, request.params.arguments ?? {}, {
      ...extra,
      sendRequest: extra.sendRequest as Server["request"],
    }),
  );
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, (request) =>
    getPrompt(request.params.name, request.params.arguments ?? {}),
  );
  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: "test://template/{id}/data",
        name: "template-data",
        description: "Data by id.",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => readResource(request.params.uri));
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    subscribed.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscribed.delete(request.params.uri);
    return {};
  });
  server.setRequestHandler(SetLevelRequestSchema, () => ({}));
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const { ref, argument } = request.params;
    const values =
      ref.type === "ref/prompt" && ref.name === "test_prompt_with_arguments"
        ? ["paris", "park", "party"].filter((value) => value.startsWith(argument.value))
        : [];
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

/** The reference server on 127.0.0.1:0 over Streamable HTTP; its URL and how to stop it. */
export async function startReferenceMcpServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    const id = req.headers["mcp-session-id"];
    const known = typeof id === "string" ? sessions.get(id) : undefined;
    if (known) return known.handleRequest(req, res);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (sid) => void sessions.set(sid, transport),
      eventStore: new InMemoryEventStore(),
      retryInterval: 50,
    });
    await referenceServer().connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    async close() {
      for (const transport of sessions.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
