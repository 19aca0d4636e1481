import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { renderToolPrompt } from "../../src/prompt/index.ts";
import { callerArb, nameArb, policyArb, rulesArb, toolsArb } from "../access/arbitraries.ts";
import { NO_ALWAYS } from "../access/fixtures.ts";

/** Name-shaped tokens of the text, as a reader would see them (trailing sentence dots dropped). */
const tokens = (text: string): Set<string> =>
  new Set(
    (text.match(/[A-Za-z0-9_.-]+/g) ?? []).flatMap((t) => [
      t.toLowerCase(),
      t.toLowerCase().replace(/[.-]+$/, ""),
    ]),
  );

describe("renderToolPrompt (property)", () => {
  it("never contains the name or alias of a tool the caller cannot see", () => {
    fc.assert(
      fc.property(
        toolsArb,
        policyArb,
        rulesArb,
        callerArb,
        fc.array(nameArb, { maxLength: 6 }),
        fc.boolean(),
        (tools, policy, visibility, who, activeNames, searchEnabled) => {
          const access = createAccessControl({ policy, visibility, toolSearch: NO_ALWAYS }).forCaller(who);
          const out = renderToolPrompt({
            caller: who,
            access,
            tools,
            activeNames,
            toolSearch: { enabled: searchEnabled },
            directory: { maxEntries: 10 },
            // A careless search that returns everything, hidden tools included.
            hints: { message: "anything", k: 5, search: () => tools.map((t) => t.name) },
          });
          const visibleNames = new Set(
            tools.filter((t) => access.canActivate(t)).map((t) => t.name.toLowerCase()),
          );
          const seen = tokens(out.text);
          for (const t of tools.filter((x) => !access.canActivate(x))) {
            for (const name of [t.name, ...t.aliases]) {
              if (visibleNames.has(name.toLowerCase())) continue; // an alias equal to a visible name
              expect(seen.has(name.toLowerCase()), `${name} leaked:\n${out.text}`).toBe(false);
            }
            expect(out.visibleTools).not.toContain(t.name);
            expect(out.hintedTools).not.toContain(t.name);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
