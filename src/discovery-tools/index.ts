export {
  type DiscoveryToolDefinition,
  type DiscoveryToolsOptions,
  discoveryToolDefinitions,
} from "./definitions.ts";
