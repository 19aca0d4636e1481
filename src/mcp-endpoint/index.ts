export { MCP_PATH, McpEndpoint } from "./endpoint.ts";
