import { describe, expect, it } from "vitest";
import { matchesAllWithPrefix, mayMatchWithPrefix } from "../../src/access/glob.ts";
import { compileGlobs } from "../../src/access/index.ts";

describe("compileGlobs", () => {
  it("lets * span dots", () => {
    expect(compileGlobs(["github.*"])("github.repos.list")).toBe(true);
  });

  it("treats every other character literally (a regex-style .* is not match-all)", () => {
    const m = compileGlobs([".*"]);
    expect(m("github.create_issue")).toBe(false);
    expect(m(".hidden")).toBe(true);
    expect(compileGlobs(["github.*"])("githubXcreate")).toBe(false);
  });

  it("matches case-insensitively", () => {
    expect(compileGlobs(["GitHub.Delete_Repo"])("github.delete_repo")).toBe(true);
  });

  it("anchors both ends and handles stars in the middle", () => {
    const m = compileGlobs(["a*b*c"]);
    expect(m("abc")).toBe(true);
    expect(m("a.x.b.y.c")).toBe(true);
    expect(m("a.x.c.b")).toBe(false);
    expect(m("xabc")).toBe(false);
    expect(compileGlobs(["ab*ba"])("aba")).toBe(false);
  });

  it("matches nothing for an empty list", () => {
    expect(compileGlobs([])("anything")).toBe(false);
  });

  it("stays linear on a pathological caller glob", () => {
    const glob = `${"*a".repeat(50)}*b`;
    const name = "a".repeat(5000);
    const started = performance.now();
    expect(compileGlobs([glob])(name)).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe("what a namespace may show (MCP servers' prompts and resources, issue 45)", () => {
  it("mayMatchWithPrefix: whether some name under the prefix could match, erring towards yes", () => {
    for (const glob of ["github.*", "git*", "github.search", "*", "*.search", "GITHUB.*"])
      expect(mayMatchWithPrefix([glob], "github."), glob).toBe(true);
    for (const glob of ["jira.*", "jira.search", "gitlab.*"])
      expect(mayMatchWithPrefix([glob], "github."), glob).toBe(false);
    expect(mayMatchWithPrefix([], "github.")).toBe(false);
  });

  it("matchesAllWithPrefix: whether every name under the prefix matches (a whole server denied)", () => {
    for (const glob of ["github.*", "git*", "*", "Github.**"])
      expect(matchesAllWithPrefix([glob], "github."), glob).toBe(true);
    for (const glob of ["github.s*", "github.*.x", "github.search", "jira.*"])
      expect(matchesAllWithPrefix([glob], "github."), glob).toBe(false);
  });
});
