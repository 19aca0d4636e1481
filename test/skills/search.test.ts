import { describe, expect, it } from "vitest";
import { caller, fixture, GLOBAL, jsonSkill, thrown } from "./helpers.ts";

const files = [
  {
    path: "ping.skill.json",
    content: jsonSkill({
      name: "kubernetes.ping",
      trigger: "check the cluster answers",
      tags: ["kubernetes"],
    }),
  },
  {
    path: "pods.skill.json",
    content: jsonSkill({
      name: "kubernetes.list_pods",
      title: "List kubernetes pods",
      trigger: "list pods in a namespace",
      task_type: "code",
    }),
  },
  {
    path: "pr.skill.json",
    content: jsonSkill({
      name: "github.open_pr",
      trigger: "open a pull request on GitHub",
      task_type: "api",
    }),
  },
  {
    path: "retry.skill.json",
    content: jsonSkill({ name: "http.retry_429", trigger: "the API answers 429 Too Many Requests" }),
  },
];

function loaded() {
  const f = fixture();
  f.service.loadSkillPack({ pack: "core", scope: GLOBAL, files });
  return f;
}

describe("searchSkills", () => {
  it("ranks by bm25 relevance (not by tie-breaks), with scores in [0, 1]", () => {
    const { service } = loaded();
    const result = service.searchSkills(caller("t1"), { query: "list kubernetes pods" });
    expect(result.effectiveSearchType).toBe("fts");
    expect(result.skills[0]?.name).toBe("kubernetes.list_pods");
    const widened = service.searchSkills(caller("t1"), { query: "pods namespace cluster" });
    expect(widened.skills.map((s) => s.name)).toEqual(["kubernetes.list_pods", "kubernetes.ping"]);
    const [best, next] = widened.skills.map((s) => s.score);
    expect(best).toBeGreaterThan(next ?? 1);
    for (const s of widened.skills) expect(s.score >= 0 && s.score <= 1).toBe(true);
  });

  it("widens an AND query that finds nothing to OR and says so", () => {
    const { service } = loaded();
    const result = service.searchSkills(caller("t1"), { query: "kubernetes github" });
    expect(result.strategy).toBe("or");
    expect(result.skills.map((s) => s.name)).toEqual([
      "github.open_pr",
      "kubernetes.list_pods",
      "kubernetes.ping",
    ]);
    const scores = result.skills.map((s) => s.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // Each matches one of the two words: none is a good match.
    for (const score of scores) expect(score).toBeLessThan(0.75);
  });

  it("repairs a typo as tool search does and reports the rewrite", () => {
    const { service } = loaded();
    const result = service.searchSkills(caller("t1"), { query: "open a pull reqest" });
    expect(result.skills[0]?.name).toBe("github.open_pr");
    expect(result.rewrites).toContainEqual({ from: "reqest", to: "request", kind: "typo" });
    expect(result.matchQuality).toBe("good");
  });

  it("reads shorthand through the synonym table and reports it", () => {
    const { service } = loaded();
    const result = service.searchSkills(caller("t1"), { query: "k8s pods" });
    expect(result.skills[0]?.name).toBe("kubernetes.list_pods");
    expect(result.rewrites).toContainEqual({ from: "k8s", to: "kubernetes", kind: "synonym" });
  });

  it("finds a skill for each intent of a request that asks for two things", () => {
    const { service } = loaded();
    const result = service.searchSkills(caller("t1"), { query: "list pods and open a pull request" });
    expect(result.skills.slice(0, 2).map((s) => s.name)).toEqual(["kubernetes.list_pods", "github.open_pr"]);
  });

  it("scores a skill by itself, not by the other hits or the limit", () => {
    const { service } = loaded();
    const alone = service.searchSkills(caller("t1"), { query: "github", limit: 1 }).skills[0]?.score;
    expect(alone).toBeGreaterThan(0);
    expect(service.searchSkills(caller("t1"), { query: "github", limit: 20 }).skills[0]?.score).toBe(alone);
  });

  it("lowers every score for words no skill has", () => {
    const { service } = loaded();
    const plain = service.searchSkills(caller("t1"), { query: "kubernetes pods" }).skills[0]?.score ?? 0;
    const padded =
      service.searchSkills(caller("t1"), { query: "kubernetes pods zqxj" }).skills[0]?.score ?? 1;
    expect(padded).toBeLessThan(plain);
  });

  it("filters by task type", () => {
    const { service } = loaded();
    const result = service.searchSkills(caller("t1"), { query: "kubernetes", taskType: "code" });
    expect(result.skills.map((s) => s.name)).toEqual(["kubernetes.list_pods"]);
  });

  it("exact search matches the name as written, in any case or separators, or its bare last segment, with score 1.0", () => {
    const { service } = loaded();
    expect(
      service.searchSkills(caller("t1"), { query: "github.open_pr", type: "exact" }).skills,
    ).toMatchObject([{ name: "github.open_pr", score: 1, matchType: "exact" }]);
    expect(
      service.searchSkills(caller("t1"), { query: "GitHub Open-PR", type: "exact" }).skills,
    ).toMatchObject([{ name: "github.open_pr", score: 1, matchType: "exact_normalized" }]);
    expect(service.searchSkills(caller("t1"), { query: "open_pr", type: "exact" }).skills[0]?.name).toBe(
      "github.open_pr",
    );
  });

  it("regex search scores full name 0.95, prefix 0.90, substring 0.85, other fields 0.75", () => {
    const { service } = loaded();
    const score = (query: string) =>
      Object.fromEntries(
        service.searchSkills(caller("t1"), { query, type: "regex" }).skills.map((s) => [s.name, s.score]),
      );
    expect(score("github\\.open_pr")).toEqual({ "github.open_pr": 0.95 });
    expect(score("kubernetes\\.")).toEqual({ "kubernetes.ping": 0.9, "kubernetes.list_pods": 0.9 });
    expect(score("pods")).toEqual({ "kubernetes.list_pods": 0.85 });
    expect(score("too many")).toEqual({ "http.retry_429": 0.75 });
  });

  it("answers in the shape tool search answers in: match type by where a pattern matched, strategy, effective type", () => {
    const { service } = loaded();
    const regex = service.searchSkills(caller("t1"), {
      query: "^kubernetes\\.ping$|pods|too many",
      type: "regex",
    });
    expect(regex.skills.map((s) => [s.name, s.matchType])).toEqual([
      ["kubernetes.ping", "regex_full_name"],
      ["kubernetes.list_pods", "regex_name_substring"],
      ["http.retry_429", "regex_text"],
    ]);
    expect([regex.strategy, regex.effectiveSearchType, regex.matchQuality]).toEqual([
      "regex",
      "regex",
      "good",
    ]);
    const fuzzy = service.searchSkills(caller("t1"), { query: "githb" });
    expect([fuzzy.strategy, fuzzy.effectiveSearchType]).toEqual(["fuzzy", "fuzzy"]);
    expect(fuzzy.skills[0]?.matchType).toBe("fts_fuzzy");
  });

  it("rejects an invalid regex with the parser's message and a too-long one with the cap", () => {
    const { service } = loaded();
    const invalid = thrown(() => service.searchSkills(caller("t1"), { query: "(unclosed", type: "regex" }));
    expect(invalid.code).toBe("invalid_argument");
    expect(invalid.message).toMatch(/^invalid regex: .*missing/i);
    const long = thrown(() => service.searchSkills(caller("t1"), { query: "a".repeat(300), type: "regex" }));
    expect(long.message).toContain("the limit is 256");
  });

  it("runs regex patterns in linear time", () => {
    const { service } = loaded();
    const start = performance.now();
    service.searchSkills(caller("t1"), { query: "(a+)+$", type: "regex" });
    expect(performance.now() - start).toBeLessThan(500);
  });

  it("rejects out-of-range limits naming the allowed range", () => {
    const { service } = loaded();
    expect(thrown(() => service.searchSkills(caller("t1"), { query: "x", limit: 21 })).message).toBe(
      "limit must be 1–20, got 21",
    );
    expect(thrown(() => service.searchSkills(caller("t1"), { query: "  " })).message).toBe(
      "query must not be empty",
    );
  });

  it("emits skill_search_query with the caller's tenant, session and run", () => {
    const { service, sink } = loaded();
    service.searchSkills(caller("t1"), { query: "kubernetes" });
    expect(sink.ofType("skill_search_query")[0]).toMatchObject({
      tenantId: "t1",
      sessionId: "s1",
      runId: "r1",
      attributes: { search_type: "fts", effective_search_type: "fts", result_count: 2 },
    });
  });
});
