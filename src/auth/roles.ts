import type { Role } from "../caller/caller.ts";

/**
 * THE table of who may call what: every wayfind RPC with the role it needs. A test fails when an RPC
 * exists without a row here, so none is ever served by accident. `admin` may call everything.
 * - agent    — discover and use tools and skills, record usage, for its own tenant;
 * - observer — watch event streams, read usage summaries and tool sources, for its own tenant;
 * - admin    — register tools and load skill packs (global ones only when bound to no tenant),
 *              manage API keys (its tenant's; every tenant's when bound to none), and observe every
 *              tenant when bound to none (the operator).
 * Health checks and reflection are public (probes and `buf curl` need no credentials).
 */
export const METHOD_ROLES: Readonly<Record<string, Role>> = {
  "/wayfind.v1.ToolDiscoveryService/RegisterTools": "admin",
  "/wayfind.v1.ToolDiscoveryService/ListTools": "agent",
  "/wayfind.v1.ToolDiscoveryService/SearchTools": "agent",
  "/wayfind.v1.ToolDiscoveryService/GetTools": "agent",
  "/wayfind.v1.ToolDiscoveryService/ActivateTools": "agent",
  "/wayfind.v1.ToolDiscoveryService/DeactivateTools": "agent",
  "/wayfind.v1.ToolDiscoveryService/ResolveTool": "agent",
  "/wayfind.v1.ToolDiscoveryService/CheckToolCall": "agent",
  "/wayfind.v1.ToolDiscoveryService/CallTool": "agent",
  "/wayfind.v1.ToolDiscoveryService/RenderToolPrompt": "agent",
  "/wayfind.v1.ToolDiscoveryService/RenderToolPayload": "agent",
  "/wayfind.v1.ToolDiscoveryService/GetDiscoveryTools": "agent",
  "/wayfind.v1.ToolDiscoveryService/ListToolSources": "observer",
  "/wayfind.v1.ToolDiscoveryService/ListTenants": "admin",
  "/wayfind.v1.ToolDiscoveryService/ReportToolOutcome": "agent",
  "/wayfind.v1.ToolDiscoveryService/WatchToolEvents": "observer",
  "/wayfind.v1.SkillService/LoadSkillPack": "admin",
  "/wayfind.v1.SkillService/SearchSkills": "agent",
  "/wayfind.v1.SkillService/GetSkills": "agent",
  "/wayfind.v1.SkillService/ListSkills": "agent",
  "/wayfind.v1.SkillService/GetRelevantSkills": "agent",
  "/wayfind.v1.SkillService/RenderSkillDirectory": "agent",
  "/wayfind.v1.SkillService/ReportSkillOutcome": "agent",
  "/wayfind.v1.SkillService/WatchSkillEvents": "observer",
  "/wayfind.v1.UsageService/RecordUsage": "agent",
  "/wayfind.v1.UsageService/GetUsageSummary": "observer",
  "/wayfind.v1.UsageService/WatchUsageEvents": "observer",
  "/wayfind.v1.KeyService/ListApiKeys": "admin",
  "/wayfind.v1.KeyService/CreateApiKey": "admin",
  "/wayfind.v1.KeyService/RevokeApiKey": "admin",
};
