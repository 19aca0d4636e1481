import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { discoveryToolDefinitions } from "../../src/discovery-tools/index.ts";

const ajv = new Ajv2020({ strict: true, allErrors: true });

describe("discoveryToolDefinitions", () => {
  it("returns tool_search and tool_get, plus the skill tools when asked", () => {
    expect(discoveryToolDefinitions({ includeSkillTools: false }).map((d) => d.name)).toEqual([
      "tool_search",
      "tool_get",
    ]);
    expect(discoveryToolDefinitions({ includeSkillTools: true }).map((d) => d.name)).toEqual([
      "tool_search",
      "tool_get",
      "skill_search",
      "skill_get",
      "skill_list",
    ]);
  });

  it("has strict-valid schemas with 2–3 examples that validate against them", () => {
    for (const def of discoveryToolDefinitions()) {
      const validate = ajv.compile(def.argsSchema);
      expect(def.examples.length, def.name).toBeGreaterThanOrEqual(2);
      expect(def.examples.length, def.name).toBeLessThanOrEqual(3);
      for (const example of def.examples) {
        expect(validate(example.args), `${def.name} ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
  });

  it("rejects arguments the schemas do not allow", () => {
    const [search, get] = discoveryToolDefinitions({ includeSkillTools: false });
    if (search === undefined || get === undefined) throw new Error("missing definitions");
    expect(ajv.validate(search.argsSchema, { query: "x", limit: 21 })).toBe(false);
    expect(ajv.validate(search.argsSchema, { query: "x", typo: 1 })).toBe(false);
    expect(ajv.validate(get.argsSchema, { names: [] })).toBe(false);
  });

  it("describes every tool for the model", () => {
    for (const def of discoveryToolDefinitions()) expect(def.description.length).toBeGreaterThan(40);
  });
});
