import fc from "fast-check";
import type { Caller } from "../../src/caller/caller.ts";
import type { PolicyConfig, VisibilityRuleConfig } from "../../src/config/types.ts";
import type { Tool } from "../../src/discovery/types.ts";
import { caller, tool } from "./fixtures.ts";

/**
 * Shared fast-check generators. Name pieces come from a tiny alphabet so random globs, aliases and
 * names collide often; the pieces never occur as words in wayfind's fixed prompt text.
 */
const PIECES = ["alpha", "bravo", "gh", "zulu"] as const;
const TAGS = ["t1", "t2", "t3"] as const;
const TENANTS = ["acme", "beta", ""] as const;
const ENTITLEMENTS = ["e1", "e2"] as const;

export const nameArb = fc
  .tuple(
    fc.constantFrom(...PIECES),
    fc.array(fc.tuple(fc.constantFrom(".", "_"), fc.constantFrom(...PIECES)), { maxLength: 2 }),
  )
  .map(([head, rest]) => head + rest.map(([sep, piece]) => sep + piece).join(""));

/** Globs including the classic leaks: `*`, regex-style `.*`, exact names, prefixes and infixes. */
const globArb = fc.oneof(
  nameArb,
  fc.constant("*"),
  fc.constant(".*"),
  nameArb.map((n) => `${n}*`),
  nameArb.map((n) => `*${n}`),
  nameArb.map((n) => `*${n}*`),
  fc.tuple(nameArb, nameArb).map(([a, b]) => `${a}*${b}`),
  nameArb.map((n) => n.toUpperCase()),
);

export const globsArb = fc.array(globArb, { maxLength: 3 });

export const toolsArb: fc.Arbitrary<Tool[]> = fc
  .uniqueArray(nameArb, { minLength: 1, maxLength: 12 })
  .chain((names) =>
    fc.tuple(
      ...names.map((name) =>
        fc
          .record({
            aliases: fc.array(nameArb, { maxLength: 2 }),
            tags: fc.subarray([...TAGS]),
            always: fc.boolean(),
            mention: fc.constantFrom(...names, ...PIECES),
          })
          .map(({ aliases, tags, always, mention }) =>
            tool(name, {
              aliases: aliases.filter((a) => a !== name),
              tags,
              loadingMode: always ? "always" : "deferred",
              // Descriptions mention other tools: rendering must redact the hidden ones.
              description: `Works with ${mention}.`,
              examples: [{ args: { target: mention }, description: `uses ${mention}`, tags: ["minimal"] }],
            }),
          ),
      ),
    ),
  );

export const policyArb: fc.Arbitrary<PolicyConfig> = fc.record({
  allowed: fc.oneof(fc.constant(["*"]), globsArb),
  denied: globsArb,
  requireTags: fc.subarray([...TAGS], { maxLength: 2 }),
});

const ruleArb: fc.Arbitrary<VisibilityRuleConfig> = fc.record({
  match: fc.record({
    tenant: fc.option(fc.constantFrom("acme", "beta"), { nil: undefined }),
    entitlements: fc.option(fc.subarray([...ENTITLEMENTS], { minLength: 1 }), { nil: undefined }),
  }),
  allow: fc.oneof(fc.constant(["*"]), globsArb),
  deny: globsArb,
});

export const rulesArb = fc.array(ruleArb, { maxLength: 3 });

export const callerArb: fc.Arbitrary<Caller> = fc
  .record({
    tenantId: fc.constantFrom(...TENANTS),
    entitlements: fc.subarray([...ENTITLEMENTS]),
    narrowToTools: fc.oneof(fc.constant([] as string[]), globsArb),
  })
  .map((c) => caller(c));

/** Reference glob: an independent regex translation (dotAll, case-insensitive). */
export function refGlob(glob: string, name: string): boolean {
  const source = glob
    .split("*")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${source}$`, "is").test(name);
}

const anyGlob = (globs: readonly string[], name: string) => globs.some((g) => refGlob(g, name));
const anyGlobNameOrAlias = (globs: readonly string[], t: Tool) =>
  anyGlob(globs, t.name) || t.aliases.some((a) => anyGlob(globs, a));

/** The documented semantics, written independently of src/access. */
export function referenceCanActivate(
  policy: PolicyConfig,
  rules: readonly VisibilityRuleConfig[],
  who: Caller,
  t: Tool,
): boolean {
  if (!anyGlob(policy.allowed, t.name)) return false;
  if (anyGlobNameOrAlias(policy.denied, t)) return false;
  const tags = t.tags.map((x) => x.toLowerCase());
  if (!policy.requireTags.every((x) => tags.includes(x.toLowerCase()))) return false;
  const matching = rules.filter(
    (r) =>
      (r.match.tenant === undefined || r.match.tenant === who.tenantId) &&
      (r.match.entitlements === undefined || r.match.entitlements.every((e) => who.entitlements.includes(e))),
  );
  if (rules.length > 0) {
    if (!matching.some((r) => anyGlob(r.allow, t.name))) return false;
    if (matching.some((r) => anyGlobNameOrAlias(r.deny, t))) return false;
  }
  if (who.narrowToTools.length > 0 && !anyGlob(who.narrowToTools, t.name)) return false;
  return true;
}
