export { MCP_PATH, McpEndpoint, type McpPeers } from "./endpoint.ts";
