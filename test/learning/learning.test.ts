import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MatchType, Outcome } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

/** An HR catalog where "PTO" is this deployment's word for leave: no tool says it. */
const TOOLS = [
  { name: "hr.request_leave", description: "Files a leave request for an employee for the given days." },
  { name: "hr.payslip", description: "Shows an employee's payslip for a month." },
  { name: "travel.book_flight", description: "Books a flight for a trip on the given days." },
  { name: "travel.book_hotel", description: "Books a hotel room for a trip." },
  { name: "calendar.create_event", description: "Creates a calendar event on a day." },
  { name: "hr.secret_salaries", description: "Lists every employee's salary; leave requests too." },
];
const REQUEST = "book PTO days";

let wayfind: RouterTestServer;
const tools = () => wayfind.grpc(ToolDiscoveryService);
const caller = (tenantId: string, runId: string, userId = "u-1") => ({
  tenantId,
  runId,
  userId,
  sessionId: "s",
});

/** Skills of the same deployment: "PTO" is in none of them either. */
const SKILLS = [
  { name: "plan-a-trip", text: "Plan a business trip: book the flights and a hotel for the given days." },
  { name: "request-leave", text: "File a leave request for the days off in the HR system." },
  { name: "log-hours", text: "Log the days and hours worked in the timesheet." },
];

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-learning-"));
  const catalog = join(dir, "tools.jsonl");
  writeFileSync(catalog, TOOLS.map((t) => JSON.stringify(t)).join("\n"));
  mkdirSync(join(dir, "skills"));
  for (const skill of SKILLS)
    writeFileSync(
      join(dir, "skills", `${skill.name}.skill.md`),
      `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.text)}\n---\n# ${skill.text}\n\n## Steps\n1. ${skill.text}\n`,
    );
  wayfind = await startRouterServer({
    catalogs: [{ path: catalog, loading_mode: "deferred" }],
    skill_packs: [{ name: "hr", path: join(dir, "skills") }],
    // A burst of 50 lessons per principal, then 5 a second.
    learning: { lessons_per_second: 5, operator_tenants: ["ops"] },
    // hr.secret_salaries is hidden from tenant "beta".
    visibility: [
      { match: { tenant: "beta" }, allow: ["*"], deny: ["hr.secret_salaries"] },
      ...["alpha", "gamma", "delta", "epsilon", "zeta", "eta", "ops", "theta", "iota", "kappa"].map(
        (tenant) => ({
          match: { tenant },
          allow: ["*"],
        }),
      ),
    ],
  });
});
afterAll(() => wayfind.stop());

async function rankOf(tenantId: string, tool: string, request = REQUEST) {
  const response = await tools().searchTools({ caller: caller(tenantId, "look"), query: request, limit: 10 });
  return { rank: response.tools.findIndex((t) => t.name === tool), response };
}

/** One run of an agent of `tenantId`: it searches, then opens `tool`. */
async function choose(tenantId: string, run: string, tool: string, userId = "u-1") {
  const found = await tools().searchTools({
    caller: caller(tenantId, run, userId),
    query: REQUEST,
    limit: 10,
  });
  await tools().getTools({ caller: caller(tenantId, run, userId), names: [tool] });
  return found;
}

describe("learning from use", () => {
  it("gives every search a search_id and every hit a learned_score", async () => {
    const { response } = await rankOf("alpha", "hr.request_leave");
    expect(response.searchId).toMatch(/^s_[A-Za-z0-9_-]{16}$/);
    expect(response.tools.every((t) => t.learnedScore === 0)).toBe(true);
  });

  it("lifts the tool a tenant's agents choose for a request, for that tenant only", async () => {
    const before = await rankOf("alpha", "hr.request_leave");
    const otherBefore = await rankOf("gamma", "hr.request_leave");
    await choose("alpha", "run-1", "hr.request_leave");
    await choose("alpha", "run-2", "hr.request_leave");
    const after = await rankOf("alpha", "hr.request_leave");
    expect(after.rank).toBe(0);
    expect(before.rank === -1 || before.rank > 0).toBe(true);
    const hit = after.response.tools[0];
    expect(hit?.learnedScore).toBeGreaterThan(0);
    // Another tenant's answer is byte-identical to what it was before alpha's traffic.
    const otherAfter = await rankOf("gamma", "hr.request_leave");
    expect(strip(otherAfter.response)).toEqual(strip(otherBefore.response));
  });

  it("lets the operator's tenants teach every tenant, at half strength, and no one else's", async () => {
    const before = await rankOf("theta", "hr.request_leave");
    await choose("ops", "ops-1", "hr.request_leave");
    await choose("iota", "iota-1", "hr.request_leave");
    const fromOps = await rankOf("theta", "hr.request_leave");
    const own = await rankOf("ops", "hr.request_leave");
    const learned = (r: typeof own) => r.response.tools[r.rank]?.learnedScore ?? 0;
    expect(learned(fromOps)).toBeCloseTo(learned(own) / 2, 9);
    expect(learned(fromOps)).toBeGreaterThan(0);
    expect(fromOps.rank).toBeLessThan(before.rank === -1 ? 99 : before.rank);
    // iota is no operator tenant: its choice reaches no one (theta's answer is ops's doing alone).
    const iotaOnly = await rankOf("kappa", "hr.request_leave");
    expect(learned(iotaOnly)).toBeCloseTo(learned(own) / 2, 9);
  });

  it("never outranks a tool named like the request", async () => {
    for (const run of ["n-1", "n-2", "n-3"]) {
      await tools().searchTools({ caller: caller("delta", run), query: "hr.payslip", limit: 10 });
      await tools().getTools({ caller: caller("delta", run), names: ["hr.request_leave"] });
    }
    const { response } = await rankOf("delta", "hr.payslip", "hr.payslip");
    expect(response.tools[0]?.name).toBe("hr.payslip");
  });

  it("learns from an outcome report naming the search, once per idempotency key", async () => {
    const found = await tools().searchTools({ caller: caller("epsilon", "r"), query: REQUEST, limit: 10 });
    const report = {
      caller: caller("epsilon", "r"),
      searchId: found.searchId,
      tool: "hr.request_leave",
      outcome: Outcome.SUCCEEDED,
      idempotencyKey: "k-1",
    };
    // The tool was not a hit of this words-only search, so the report is an event only.
    const shown = found.tools.some((t) => t.name === "hr.request_leave");
    expect(await tools().reportToolOutcome(report)).toMatchObject({ learned: shown, duplicate: false });
    expect(await tools().reportToolOutcome(report)).toMatchObject({ learned: false, duplicate: true });
    const hit = found.tools[0]?.name ?? "";
    const second = await tools().reportToolOutcome({ ...report, tool: hit, idempotencyKey: "k-2" });
    expect(second).toMatchObject({ learned: true, duplicate: false });
  });

  it("answers NOT_FOUND for a hidden tool, exactly as for a missing one", async () => {
    const found = await tools().searchTools({ caller: caller("beta", "r"), query: "salary", limit: 10 });
    const hidden = await failure(
      tools().reportToolOutcome({
        caller: caller("beta", "r"),
        searchId: found.searchId,
        tool: "hr.secret_salaries",
        outcome: Outcome.SUCCEEDED,
      }),
    );
    const missing = await failure(
      tools().reportToolOutcome({
        caller: caller("beta", "r"),
        searchId: found.searchId,
        tool: "hr.no_such_tool",
        outcome: Outcome.SUCCEEDED,
      }),
    );
    expect(hidden.code).toBe(Code.NotFound);
    expect(hidden.rawMessage.replace("secret_salaries", "X")).toBe(
      missing.rawMessage.replace("no_such_tool", "X"),
    );
  });

  it("answers NOT_FOUND for another tenant's search id, as for an unknown one", async () => {
    const found = await tools().searchTools({ caller: caller("alpha", "r"), query: REQUEST, limit: 10 });
    const stolen = await failure(
      tools().reportToolOutcome({
        caller: caller("gamma", "r"),
        searchId: found.searchId,
        tool: "hr.payslip",
        outcome: Outcome.WRONG_TOOL,
      }),
    );
    const unknown = await failure(
      tools().reportToolOutcome({
        caller: caller("gamma", "r"),
        searchId: "s_AAAAAAAAAAAAAAAA",
        tool: "hr.payslip",
        outcome: Outcome.WRONG_TOOL,
      }),
    );
    expect(stolen.code).toBe(Code.NotFound);
    expect(stolen.rawMessage.replace(found.searchId, "X")).toBe(
      unknown.rawMessage.replace("s_AAAAAAAAAAAAAAAA", "X"),
    );
  });

  it("lets no one principal own a tool's learned weight: a flood is undone by two others", async () => {
    const first = await tools().searchTools({ caller: caller("zeta", "f"), query: REQUEST, limit: 10 });
    const target = first.tools.at(-1)?.name ?? "";
    for (let i = 0; i < 30; i++) {
      const found = await tools().searchTools({
        caller: caller("zeta", `flood-${i}`, "flooder"),
        query: REQUEST,
        limit: 10,
      });
      await tools().reportToolOutcome({
        caller: caller("zeta", `flood-${i}`, "flooder"),
        searchId: found.searchId,
        tool: target,
        outcome: Outcome.SUCCEEDED,
      });
    }
    const flooded = await rankOf("zeta", target);
    expect(flooded.response.tools[flooded.rank]?.learnedScore).toBeGreaterThan(0);
    for (const user of ["honest-1", "honest-2"]) {
      const found = await tools().searchTools({
        caller: caller("zeta", user, user),
        query: REQUEST,
        limit: 10,
      });
      await tools().reportToolOutcome({
        caller: caller("zeta", user, user),
        searchId: found.searchId,
        tool: target,
        outcome: Outcome.WRONG_TOOL,
      });
    }
    const after = await rankOf("zeta", target);
    expect(after.rank === -1 || (after.response.tools[after.rank]?.learnedScore ?? 0) <= 0).toBe(true);
  });

  it("refuses outcome reports beyond a principal's rate with RESOURCE_EXHAUSTED, saying when to retry", async () => {
    const found = await tools().searchTools({
      caller: caller("eta", "rate", "eager"),
      query: REQUEST,
      limit: 10,
    });
    const tool = found.tools[0]?.name ?? "";
    const answers = await Promise.allSettled(
      Array.from({ length: 80 }, () =>
        tools().reportToolOutcome({
          caller: caller("eta", "rate", "eager"),
          searchId: found.searchId,
          tool,
          outcome: Outcome.SUCCEEDED,
        }),
      ),
    );
    const refused = answers.filter((a) => a.status === "rejected").map((a) => ConnectError.from(a.reason));
    expect(refused.length).toBeGreaterThan(0);
    expect(
      refused.every((e) => e.code === Code.ResourceExhausted && /retry in \d+ ms/.test(e.rawMessage)),
    ).toBe(true);
    // Another principal of the tenant still reports.
    const other = await tools().reportToolOutcome({
      caller: caller("eta", "rate", "patient"),
      searchId: found.searchId,
      tool,
      outcome: Outcome.SUCCEEDED,
    });
    expect(other.learned).toBe(true);
  });

  it("learns from requests, notes and keys holding control characters (NUL included), on every storage", async () => {
    const who = caller("epsilon", "nul");
    const found = await tools().searchTools({ caller: who, query: "book\u0000PTO\tdays", limit: 10 });
    const answer = await tools().reportToolOutcome({
      caller: who,
      searchId: found.searchId,
      tool: found.tools[0]?.name ?? "",
      outcome: Outcome.SUCCEEDED,
      note: "worked\u0000fine",
      idempotencyKey: "nul\u0000key",
    });
    expect(answer).toMatchObject({ learned: true, duplicate: false });
  });

  it("refuses a report without an outcome, saying which values there are", async () => {
    const error = await failure(
      tools().reportToolOutcome({ caller: caller("alpha", "r"), tool: "hr.payslip" }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("OUTCOME_SUCCEEDED");
  });
  it("lifts the skill a tenant reports as used for a request, for that tenant only, and finds it for related requests", async () => {
    const skills = () => wayfind.grpc(SkillService);
    const order = async (tenantId: string, query: string) =>
      (await skills().searchSkills({ caller: caller(tenantId, "look"), query, limit: 10 })).skills.map(
        (hit) => hit.name,
      );
    const before = await order("theta", REQUEST);
    const otherBefore = strip(
      await skills().searchSkills({ caller: caller("iota", "look"), query: REQUEST, limit: 10 }),
    );
    expect(before[0]).toBe("plan-a-trip");
    expect(before).toContain("request-leave");
    for (const [i, userId] of ["u-1", "u-2"].entries()) {
      const found = await skills().searchSkills({
        caller: caller("theta", `r-${i}`, userId),
        query: REQUEST,
      });
      const reported = await skills().reportSkillOutcome({
        caller: caller("theta", `r-${i}`, userId),
        searchId: found.searchId,
        skill: "request-leave",
        outcome: Outcome.SUCCEEDED,
      });
      expect(reported).toMatchObject({ learned: true, duplicate: false });
    }
    expect((await order("theta", REQUEST))[0]).toBe("request-leave");
    const relevant = await skills().getRelevantSkills({
      caller: caller("theta", "look"),
      task: REQUEST,
      topK: 1,
    });
    expect(relevant.skillNames).toEqual(["request-leave"]);
    // No skill says "PTO": only what theta learned finds one.
    const pto = await skills().searchSkills({ caller: caller("theta", "look"), query: "PTO" });
    expect(pto.skills.map((hit) => [hit.name, hit.matchType])).toEqual([
      ["request-leave", MatchType.LEARNED],
    ]);
    expect(pto.skills[0]?.learnedScore).toBeGreaterThan(0);
    // Another tenant's answer is the very answer it got before.
    expect(
      strip(await skills().searchSkills({ caller: caller("iota", "look"), query: REQUEST, limit: 10 })),
    ).toEqual(otherBefore);
  });
});

/** A search response without its search_id (new on every search). */
function strip(response: { searchId: string }) {
  return { ...response, searchId: "" };
}
