import type { DescService } from "@bufbuild/protobuf";
import { type Client, Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/ts/google/rpc/error_details_pb.ts";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { type SideEffect, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

const acme = { tenantId: "acme", projectId: "web" };

/** The generated TS client over each protocol the server speaks. */
const protocols: Record<string, <S extends DescService>(service: S) => Client<S>> = {
  "native gRPC": (service) => wayfind.grpc(service),
  Connect: (service) => wayfind.connect(service),
  "gRPC-Web": (service) => wayfind.grpcWeb(service),
};

/** The field violations of the google.rpc.BadRequest an INVALID_ARGUMENT call failed with. */
async function violations(call: Promise<unknown>) {
  const error = await failure(call);
  expect(error.code).toBe(Code.InvalidArgument);
  // The problems travel as details, not appended to the message.
  expect(error.rawMessage).not.toContain("\n- ");
  const [badRequest, ...more] = error.findDetails(BadRequestSchema);
  expect(more).toEqual([]);
  return (badRequest?.fieldViolations ?? []).map(({ field, description }) => ({ field, description }));
}

describe.each(Object.entries(protocols))(
  "validation problems as google.rpc.BadRequest over %s",
  (_, client) => {
    it("names each invalid tool of a RegisterTools by its place in the request", async () => {
      const call = client(ToolDiscoveryService).registerTools({
        caller: acme,
        source: "details",
        tools: [
          { name: "details.fine", description: "A valid tool." },
          { name: "details.bad name!", description: "Spaces and '!' are not allowed in names." },
          { name: "details.what?", description: "'?' is not allowed either." },
        ],
      });
      expect(await violations(call)).toEqual([
        { field: "tools[1]", description: expect.stringMatching(/^tool "details\.bad name!": /) },
        { field: "tools[2]", description: expect.stringMatching(/^tool "details\.what\?": name /) },
      ]);
    });

    it("names the field of an unknown enum value", async () => {
      const call = client(ToolDiscoveryService).registerTools({
        caller: acme,
        source: "details",
        tools: [
          { name: "details.enum", description: "An enum from the future.", sideEffect: 99 as SideEffect },
        ],
      });
      expect(await violations(call)).toEqual([
        { field: "tools[0].side_effect", description: "unknown enum value 99" },
      ]);
    });

    it("names a request field outside its bound", async () => {
      const call = client(ToolDiscoveryService).searchTools({ caller: acme, query: "issue", limit: 21 });
      expect(await violations(call)).toEqual([{ field: "limit", description: "limit must be 1–20, got 21" }]);
    });

    it("names each invalid field of a RecordUsage", async () => {
      const call = client(UsageService).recordUsage({
        caller: acme,
        provider: Provider.ANTHROPIC,
        model: "claude-sonnet-4-5",
        usage: { inputTokens: -1n, outputTokens: 5n },
      });
      expect((await violations(call)).map((violation) => violation.field)).toEqual([
        "idempotency_key",
        "usage.input_tokens",
      ]);
    });

    it("lists every problem of a LoadSkillPack, the file and line in each", async () => {
      const call = client(SkillService).loadSkillPack({
        caller: acme,
        packName: "invalid",
        scope: SkillScope.TENANT,
        source: {
          case: "files",
          value: {
            files: [{ path: "bad.skill.json", content: '{"name": "bad", "trigger": 42, "steps": []}' }],
          },
        },
      });
      const problems = await violations(call);
      expect(problems.length).toBeGreaterThanOrEqual(1);
      for (const problem of problems) expect(problem.description).toMatch(/^bad\.skill\.json:\d+: /);
      expect(problems.map((problem) => problem.description)).toContainEqual(
        expect.stringContaining("trigger: must be a string, got number 42"),
      );
    });
  },
);

// Each field is checked in one place: the domain where it checks the field, else the enum mapping.
describe("request fields checked in one place", () => {
  it("refuses a LoadSkillPack with neither path nor files", async () => {
    const error = await failure(
      wayfind.grpc(SkillService).loadSkillPack({ caller: acme, packName: "empty", scope: SkillScope.TENANT }),
    );
    expect(error).toMatchObject({ code: Code.InvalidArgument });
    expect(error.rawMessage).toBe("pass exactly one of path (a server-side folder) or files (inline)");
  });

  it("refuses an unknown skill directory field, listing the known ones", async () => {
    const error = await failure(
      wayfind.grpc(SkillService).renderSkillDirectory({ caller: acme, fields: ["name", "colour"] }),
    );
    expect(error).toMatchObject({ code: Code.InvalidArgument });
    expect(error.rawMessage).toBe(
      'field must be one of name, title, trigger, description, task_type, tags, got "colour"',
    );
  });

  it("refuses a tool payload for a provider it cannot render, naming the ones it can", async () => {
    const error = await failure(
      wayfind.grpc(ToolDiscoveryService).renderToolPayload({ caller: acme, provider: Provider.BEDROCK }),
    );
    expect(error).toMatchObject({ code: Code.InvalidArgument });
    expect(error.rawMessage).toBe("provider must be PROVIDER_ANTHROPIC, PROVIDER_OPENAI or PROVIDER_GEMINI");
  });

  it("refuses a DeactivateTools without names", async () => {
    const error = await failure(
      wayfind
        .grpc(ToolDiscoveryService)
        .deactivateTools({ caller: { ...acme, sessionId: "s-1", runId: "r-1" }, names: [] }),
    );
    expect(error).toMatchObject({ code: Code.InvalidArgument });
    expect(error.rawMessage).toBe("tool names must not be empty");
  });
});
