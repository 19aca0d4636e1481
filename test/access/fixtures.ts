import type { Caller } from "../../src/caller/caller.ts";
import { ANONYMOUS_CALLER } from "../../src/caller/caller.ts";
import type { PolicyConfig, VisibilityRuleConfig } from "../../src/config/types.ts";
import type { Tool } from "../../src/discovery/types.ts";

/** A registered tool with sensible defaults; tests override what they exercise. */
export function tool(name: string, overrides: Partial<Tool> = {}): Tool {
  const dot = name.indexOf(".");
  return {
    name,
    namespace: dot > 0 ? name.slice(0, dot) : "",
    source: "test",
    owner: "",
    title: name,
    description: `Does ${name} things.`,
    tags: [],
    sideEffects: "read",
    loadingMode: "deferred",
    argsSchema: { type: "object", properties: {} },
    outputSchema: null,
    examples: [],
    aliases: [],
    hash: `hash-${name}`,
    ...overrides,
  };
}

export function caller(overrides: Partial<Caller> = {}): Caller {
  return { ...ANONYMOUS_CALLER, tenantId: "acme", sessionId: "s1", runId: "r1", ...overrides };
}

export const OPEN_POLICY: PolicyConfig = { allowed: ["*"], denied: [], requireTags: [] };

export function rule(
  match: { tenant?: string; entitlements?: string[] },
  allow: string[] = ["*"],
  deny: string[] = [],
): VisibilityRuleConfig {
  return { match: { tenant: match.tenant, entitlements: match.entitlements }, allow, deny };
}

export const NO_ALWAYS = { alwaysLoadedPatterns: [] as string[] };
