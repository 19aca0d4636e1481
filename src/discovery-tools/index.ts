export { discoveryToolDefinitions } from "./definitions.ts";
