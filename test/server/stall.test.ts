import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchType } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import {
  LoadingMode,
  RegisterToolsRequestSchema,
  type RegisterToolsResponse,
  RegisterToolsResponseSchema,
  ToolDiscoveryService,
} from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { LIMITS } from "../../src/limits.ts";
import { expectNoStall } from "../support/health.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * No caller-supplied text makes one call hold the event loop: a health check, answered by the same
 * loop, keeps answering within a budget while adversarial text goes through every path that runs a
 * pattern or a parser over it. Backtracking regexes used to stall the server for seconds on these
 * inputs.
 */

const acme = { tenantId: "acme", projectId: "web", sessionId: "s1", runId: "r1" };
/** Tools are registered by the operator: global tools, whose text is rewritten for every caller. */
const asOperator = { headers: { "wayfind-role": "admin" } };

let wayfind: TestServer;
beforeAll(async () => {
  // Hidden tools: their names are redacted from the text of the tools a caller sees.
  wayfind = await startTestServer({ policy: { denied: ["render.hidden*"] } });
});
afterAll(() => wayfind.stop());

/**
 * RegisterTools over Connect binary with the request already encoded: encoding 5,000 tools (or a few
 * wide schemas, which are Structs) takes this process 0.1–0.3 s, which would count against the
 * health checks it runs alongside.
 */
function postEncoded(request: MessageInitShape<typeof RegisterToolsRequestSchema>): () => Promise<Response> {
  const body = toBinary(RegisterToolsRequestSchema, create(RegisterToolsRequestSchema, request));
  return () =>
    fetch(`${wayfind.baseUrl}/${ToolDiscoveryService.typeName}/RegisterTools`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body,
    });
}

async function registered(response: Response): Promise<RegisterToolsResponse> {
  expect(response.status).toBe(200);
  return fromBinary(RegisterToolsResponseSchema, new Uint8Array(await response.arrayBuffer()));
}

/** The Connect error code of a refused call (its JSON body names it). */
async function refusedWith(response: Response): Promise<string> {
  expect(response.status).not.toBe(200);
  return ((await response.json()) as { code: string }).code;
}

/** The error code of a call, or OK. */
async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

/** Text with repetition structure: a unit repeated, then a tail that makes a match fail late. */
const repetitive = (maxLength: number) =>
  fc
    .tuple(
      fc.constantFrom(
        "a",
        "ab",
        "key-",
        "eyJ-",
        "http://",
        "a.",
        "a@",
        " ",
        "-",
        ".",
        "#",
        "1 ",
        "sk-",
        "\\",
      ),
      fc.integer({ min: 1, max: 4000 }),
      fc.constantFrom("", "!", "x", "@", "?", "=", ": ", "\n"),
    )
    .map(([unit, times, tail]) => `${unit.repeat(times)}${tail}`.slice(0, maxLength));

/** Patterns whose backtracking blows up on repetitive text. */
const EVIL_PATTERNS = ["^(a+)+$", "(x+x+)+y", "^(\\w+\\s?)*$", "^([a-z0-9]+[-.]?)*[a-z0-9]+@x$", "(a|aa)*b"];

describe("no caller text stalls the server", () => {
  it("registers tools whose examples meet catastrophic schema patterns", async () => {
    const tools = wayfind.grpc(ToolDiscoveryService);
    let rejected = 0;
    await expectNoStall(wayfind, async () => {
      const quoted = await codeOf(
        tools.registerTools(
          {
            source: "stall",
            tools: [
              {
                name: "stall.quoted",
                argsSchema: { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } },
                examples: [{ args: { s: "aaaaaaaaaaaaaaaaaaaaaaaaaaa!" } }],
              },
            ],
          },
          asOperator,
        ),
      );
      expect(quoted).toBe(Code.InvalidArgument);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...EVIL_PATTERNS), repetitive(20_000), async (pattern, text) => {
          const code = await codeOf(
            tools.registerTools(
              {
                source: "stall",
                tools: [
                  {
                    name: "stall.generated",
                    argsSchema: { type: "object", properties: { s: { type: "string", pattern } } },
                    examples: [{ args: { s: text } }],
                  },
                ],
              },
              asOperator,
            ),
          );
          expect([Code.InvalidArgument, "ok"]).toContain(code);
          if (code !== "ok") rejected++;
        }),
        { numRuns: 30 },
      );
    });
    expect(rejected).toBeGreaterThan(0);
  });

  it("rejects args schemas too large to compile, alone or in total, without holding the loop", async () => {
    const wide = (properties: number, i = 0) => ({
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: properties }, (_, p) => [`p${p}`, { type: "string", minLength: i }]),
      ),
    });
    // One schema of 2,000 properties took 3.6 s to compile, then overflowed the stack.
    const oneWide = postEncoded({
      caller: acme,
      source: "stall-schema",
      tools: [{ name: "stall.wide", argsSchema: wide(2_000), examples: [{ args: { p0: "x" } }] }],
    });
    // Each within its own bound, together past the call's: rejected before any is compiled.
    const manyWide = postEncoded({
      caller: acme,
      source: "stall-schema",
      tools: Array.from({ length: 11 }, (_, i) => ({
        name: `stall.wide_${i}`,
        argsSchema: wide(332, i),
        examples: [{ args: { p0: "x" } }],
      })),
    });
    await expectNoStall(wayfind, async () => {
      expect(await refusedWith(await oneWide())).toBe("invalid_argument");
      expect(await refusedWith(await manyWide())).toBe("invalid_argument");
    });
  });

  it("registers 5,000 tools with an example each, the most one call may hold, without holding the loop", async () => {
    // Each schema is compiled to check its example: 1.2–1.8 s in one turn before checks were sliced.
    const bulk = (prefix: string, count: number) =>
      postEncoded({
        caller: acme,
        source: `stall-${prefix}`,
        tools: Array.from({ length: count }, (_, i) => ({
          name: `stall.${prefix}_${i}`,
          description: `Bulk tool number ${i}.`,
          argsSchema: { type: "object" },
          examples: [{ args: {} }],
        })),
      });
    // A process decodes its first large message before the JIT has compiled the decoder (about 3×
    // slower, once); a smaller call first warms it, as any server that has been running is.
    await registered(await bulk("warm", 500)());
    const register = bulk("bulk", LIMITS.registerToolsTools.max);
    await expectNoStall(wayfind, async () => {
      expect((await registered(await register())).added).toBe(LIMITS.registerToolsTools.max);
    });
    // The other cases search and render a catalog of their own size.
    const tools = wayfind.grpc(ToolDiscoveryService);
    for (const source of ["stall-warm", "stall-bulk"])
      await tools.registerTools({ caller: acme, source, replaceSource: true, tools: [] });
  });

  it("loads, returns and injects skills whose text is built to backtrack", async () => {
    const skills = wayfind.grpc(SkillService);
    await expectNoStall(wayfind, async () => {
      // The quoted finding: four 4,000-character fields of "key-" took 14.5 s to redact.
      const keys = "key-".repeat(1000);
      const heading = `# Probe${" ".repeat(2000)}x`;
      await fc.assert(
        fc.asyncProperty(repetitive(3990), async (text) => {
          const skill = [
            "---",
            "name: stall.probe",
            `trigger: ${JSON.stringify(`probe ${text}`)}`,
            `description: ${JSON.stringify(keys)}`,
            `tags: [${JSON.stringify(`probe${text.slice(0, 50)}`)}]`,
            "---",
            heading,
            "",
            `1. ${keys}`,
            `2. ${text}`,
            `3. ${keys}`,
            "",
          ].join("\n");
          const loaded = await skills.loadSkillPack({
            caller: acme,
            packName: "stall",
            scope: SkillScope.TENANT,
            updateExistingPackSkills: true,
            source: { case: "files", value: { files: [{ path: "probe.skill.md", content: skill }] } },
          });
          expect(loaded.skillCount).toBe(1);
          const got = await skills.getSkills({ caller: acme, names: ["stall.probe"] });
          expect(got.skills).toHaveLength(1);
          await skills.getRelevantSkills({ caller: acme, task: `probe ${text}`.slice(0, 4000), topK: 3 });
        }),
        { numRuns: 15 },
      );
    });
  });

  it("searches tools with adversarial regexes and queries", async () => {
    const tools = wayfind.grpc(ToolDiscoveryService);
    await tools.registerTools(
      {
        source: "searchable",
        tools: Array.from({ length: 200 }, (_, i) => ({
          name: `searchable.tool_${i}`,
          description: `${"a".repeat(i % 50)}${"key-".repeat(i % 30)} tool number ${i}`,
        })),
      },
      asOperator,
    );
    await expectNoStall(wayfind, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(SearchType.REGEX, SearchType.FTS, SearchType.EXACT),
          fc.oneof(fc.constantFrom(...EVIL_PATTERNS), repetitive(500)),
          async (searchType, query) => {
            const code = await codeOf(tools.searchTools({ caller: acme, query, searchType }));
            expect([Code.InvalidArgument, "ok"]).toContain(code);
          },
        ),
        { numRuns: 60 },
      );
    });
  });

  it("renders prompts over tool text built to backtrack in name redaction", async () => {
    const tools = wayfind.grpc(ToolDiscoveryService);
    await tools.registerTools(
      {
        source: "render",
        tools: [
          { name: "render.hidden_tool", aliases: ["!"] },
          {
            name: "render.loud",
            description: `${"!".repeat(8000)} a${".".repeat(8000)}a`,
            loadingMode: LoadingMode.ALWAYS,
          },
        ],
      },
      asOperator,
    );
    await expectNoStall(wayfind, async () => {
      const rendered = await tools.renderToolPrompt({
        caller: acme,
        includeDirectory: true,
        hintMessage: "key-".repeat(100),
      });
      expect(rendered.text).toContain("[unavailable tool]".repeat(8000));
    });
  });
});
