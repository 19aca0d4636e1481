import { describe, expect, it } from "vitest";
import { compileGlob, compileGlobs } from "../../src/text/glob.ts";

describe("tool-name globs", () => {
  it("lets * cross dots, so a namespace glob covers every tool in it", () => {
    expect(compileGlob("github.*")("github.issues.create")).toBe(true);
    expect(compileGlob("github.*")("gitlab.create")).toBe(false);
  });

  it("matches whole names only, case-sensitively", () => {
    expect(compileGlob("create_*")("github.create_issue")).toBe(false);
    expect(compileGlob("*.create_*")("github.create_issue")).toBe(true);
    expect(compileGlob("GitHub.*")("github.create_issue")).toBe(false);
  });

  it("treats ? as exactly one character and other characters literally", () => {
    expect(compileGlob("v?.get")("v1.get")).toBe(true);
    expect(compileGlob("v?.get")("v10.get")).toBe(false);
    expect(compileGlob("a.b")("axb")).toBe(false);
  });

  it("stays fast on patterns that make regex engines backtrack", () => {
    const started = performance.now();
    const matches = compileGlob(`${"*a".repeat(20)}*b`)("a".repeat(5_000));
    expect(matches).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("matches nothing with an empty list", () => {
    expect(compileGlobs([])("anything")).toBe(false);
    expect(compileGlobs(["x", "any*"])("anything")).toBe(true);
  });
});
