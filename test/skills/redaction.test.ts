import { describe, expect, it } from "vitest";
import { redactText } from "../../src/skills/index.ts";
import { caller, fixture, GLOBAL, jsonSkill } from "./helpers.ts";

describe("redaction", () => {
  it.each([
    ["mail ops@example.com for access", "mail [REDACTED_EMAIL] for access"],
    ["call +1 415 555 0100 or (415) 555-0100", "call [REDACTED_PHONE] or [REDACTED_PHONE]"],
    ["Authorization: Bearer abcDEF123456ghiJKL789", "Authorization: Bearer [REDACTED_TOKEN]"],
    ["export OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "export OPENAI_API_KEY=[REDACTED_TOKEN]"],
    ["use ghp_abcdefghijklmnopqrstuvwxyz0123456789", "use [REDACTED_TOKEN]"],
    ["aws key AKIAIOSFODNN7EXAMPLE here", "aws key [REDACTED_TOKEN] here"],
    ["api_key=4f9a1c2b3d4e5f60718293a4b5c6d7e8", "api_key=[REDACTED_TOKEN]"],
    [
      "GET https://api.example.com/v1/items?cursor=abc&token=xyz then",
      "GET https://api.example.com/v1/items then",
    ],
  ])("redacts %j", (input, expected) => {
    expect(redactText(input)).toBe(expected);
  });

  it.each([
    "Send a Bearer token in the Authorization header.",
    "Set API_KEY=$API_KEY from the vault; never paste it.",
    "Retry after 2024-01-15 with version 1.2.3 on 10.0.0.1:8080.",
    "Run `git push origin feature/x` and open the PR.",
    "Use the sk_ prefix for skill ids.",
  ])("keeps procedural text intact: %j", (text) => {
    expect(redactText(text)).toBe(text);
  });

  it("applies to everything returned or injected, and can be switched off", async () => {
    const files = [
      {
        path: "a.skill.json",
        content: jsonSkill({
          name: "ops.contact",
          trigger: "page ops@example.com",
          steps: ["curl -H 'Authorization: Bearer abcDEF123456ghiJKL789' https://x.io/a?key=1"],
          tags: ["oncall"],
        }),
      },
    ];
    const on = fixture();
    on.service.loadSkillPack({ pack: "core", scope: GLOBAL, files });
    const got = await on.service.getSkills(caller("t1"), { names: ["ops.contact"] });
    expect(JSON.stringify(got)).not.toMatch(/ops@example|abcDEF|key=1/);
    expect(
      (await on.service.getRelevantSkills(caller("t1"), { task: "page oncall ops" })).formattedContext,
    ).toContain("[REDACTED_EMAIL]");
    const off = fixture({ redaction: false });
    off.service.loadSkillPack({ pack: "core", scope: GLOBAL, files });
    expect((await off.service.getSkills(caller("t1"), { names: ["ops.contact"] })).skills[0]?.trigger).toBe(
      "page ops@example.com",
    );
  });
});
