export { McpEndpoint } from "./endpoint.ts";
