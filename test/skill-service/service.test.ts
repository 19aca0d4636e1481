import { describe, expect, it } from "vitest";
import { ANONYMOUS_PRINCIPAL, type Principal } from "../../src/caller/caller.ts";
import { SkillService } from "../../src/skill-service/index.ts";
import { caller, fixture, jsonSkill, rejected } from "../skills/helpers.ts";

const OPERATOR: Principal = { ...ANONYMOUS_PRINCIPAL, id: "key:ops", operator: true };
const TENANT_KEY: Principal = { ...ANONYMOUS_PRINCIPAL, id: "key:t1", tenantId: "t1" };

function deployPack(name = "acme.deploy") {
  return {
    pack: "acme",
    files: [
      { path: "d.skill.json", content: jsonSkill({ name, trigger: "deploy the service to production" }) },
    ],
  };
}

/** A skill service over a real library, without the model, learning or tools. */
function service() {
  return new SkillService({ library: fixture().service, toolGateFor: () => undefined });
}

describe("loading a pack", () => {
  it("loads a project pack into the caller's own tenant and project", async () => {
    const skills = service();
    await skills.loadPack(caller("t1", "p1"), TENANT_KEY, { ...deployPack(), scope: "project" });
    const found = await skills.search(caller("t1", "p1"), { query: "deploy to production" });
    expect(found.skills.map((hit) => hit.name)).toEqual(["acme.deploy"]);
    const elsewhere = await skills.search(caller("t1", "p2"), { query: "deploy to production" });
    expect(elsewhere.skills).toEqual([]);
  });

  it("refuses a tenant pack from a caller without a tenant, saying what to send", async () => {
    const error = await rejected(
      service().loadPack(caller(""), OPERATOR, { ...deployPack(), scope: "tenant" }),
    );
    expect(error).toMatchObject({ code: "failed_precondition", message: expect.stringMatching(/tenant_id/) });
  });

  it("refuses a project pack from a caller without a project", async () => {
    const error = await rejected(
      service().loadPack(caller("t1", ""), TENANT_KEY, { ...deployPack(), scope: "project" }),
    );
    expect(error).toMatchObject({
      code: "failed_precondition",
      message: expect.stringMatching(/project_id/),
    });
  });

  it("loads a global pack only for an operator", async () => {
    const skills = service();
    const error = await rejected(
      skills.loadPack(caller("t1"), TENANT_KEY, { ...deployPack(), scope: "global" }),
    );
    expect(error.code).toBe("permission_denied");
    await skills.loadPack(caller(""), OPERATOR, { ...deployPack(), scope: "global" });
    const found = await skills.search(caller("t2", "p9"), { query: "deploy to production" });
    expect(found.skills.map((hit) => hit.name)).toEqual(["acme.deploy"]);
  });
});

describe("searching and reporting without learning", () => {
  it("answers a search with no search id to report against", async () => {
    const skills = service();
    await skills.loadPack(caller("t1", "p1"), TENANT_KEY, { ...deployPack(), scope: "project" });
    const found = await skills.search(caller("t1", "p1"), { query: "deploy to production" });
    expect(found.searchId).toBe("");
    expect(found.semantic.status).toBe("off");
  });

  it("says a skill the caller cannot see is not found, as for a missing one", async () => {
    const skills = service();
    await skills.loadPack(caller("t1", "p1"), TENANT_KEY, { ...deployPack(), scope: "project" });
    const report = { searchId: "", outcome: "succeeded" as const, note: "", key: "" };
    const hidden = await rejected(
      skills.reportOutcome(caller("t2", "p1"), { ...report, name: "acme.deploy" }),
    );
    const missing = await rejected(
      skills.reportOutcome(caller("t2", "p1"), { ...report, name: "acme.nothing" }),
    );
    expect(hidden.code).toBe("not_found");
    expect(missing.message.replace("acme.nothing", "acme.deploy")).toBe(hidden.message);
    expect(await skills.reportOutcome(caller("t1", "p1"), { ...report, name: "acme.deploy" })).toEqual({
      duplicate: false,
      learned: false,
    });
  });
});
