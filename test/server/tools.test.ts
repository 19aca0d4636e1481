import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/ts/google/rpc/error_details_pb.ts";
import {
  MatchQuality,
  Provider,
  QueryRewrite_Kind,
  SearchType,
  SemanticStatus,
} from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ActivationScope, LoadingMode, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { estimateTokens } from "../../src/text/tokens.ts";
import { failure } from "../support/rpc.ts";
import {
  type RouterTestServer,
  startRouterServer,
  startTestServer,
  type TestServer,
} from "../support/server.ts";

const CATALOG = [
  {
    name: "create_issue",
    description: "Open a new issue in a GitHub repository.",
    inputSchema: {
      type: "object",
      properties: { repo: { type: "string" }, title: { type: "string" } },
      required: ["repo", "title"],
    },
    examples: [{ args: { repo: "acme/api", title: "Crash" }, description: "Minimal bug", tags: ["minimal"] }],
  },
  {
    name: "list_pull_requests",
    description: "List open pull requests of a repository.",
    inputSchema: { type: "object" },
  },
  {
    name: "delete_repository",
    description: "Delete a GitHub repository forever.",
    inputSchema: { type: "object" },
  },
  {
    name: "read_file",
    description: "Read a file from the workspace.",
    inputSchema: { type: "object" },
    loading_mode: "always",
  },
];
const SLACK = [
  {
    name: "send_message",
    description: "Post a message to a Slack channel.",
    inputSchema: { type: "object" },
  },
];

let wayfind: RouterTestServer;
const acme = { tenantId: "acme", sessionId: "s-1", runId: "r-1" };
const globex = { tenantId: "globex", sessionId: "s-2", runId: "r-2" };

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-tools-"));
  writeFileSync(join(dir, "github.jsonl"), CATALOG.map((tool) => JSON.stringify(tool)).join("\n"));
  writeFileSync(join(dir, "slack.jsonl"), SLACK.map((tool) => JSON.stringify(tool)).join("\n"));
  wayfind = await startRouterServer(
    {
      catalogs: [
        { path: "github.jsonl", namespace: "github" },
        { path: "slack.jsonl", namespace: "slack" },
      ],
      policy: { denied: ["github.delete_*"] },
      aliases: { "github.new_issue": "github.create_issue" },
      lazy_tool_groups: [{ name: "chat", tools: ["slack.*"], triggers: { keywords: ["slack"] } }],
      visibility: [
        { match: { tenant: "acme" }, allow: ["*"] },
        { match: { tenant: "globex" }, allow: ["slack.*", "read_file", "github.read_file"] },
      ],
    },
    { dataDir: dir },
  );
});
afterAll(() => wayfind.stop());

const client = () => wayfind.grpc(ToolDiscoveryService);

describe("SearchTools", () => {
  it("finds a deferred tool by full text with scores in [0, 1], best first", async () => {
    const response = await client().searchTools({ caller: acme, query: "open an issue on github" });
    expect(response.tools[0]?.name).toBe("github.create_issue");
    const scores = response.tools.map((tool) => tool.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const score of scores) expect(score).toBeGreaterThanOrEqual(0);
    for (const score of scores) expect(score).toBeLessThanOrEqual(1);
    expect(response.effectiveSearchType).toBe(SearchType.FTS);
  });

  it("finds a tool by its bare name without the namespace", async () => {
    const response = await client().searchTools({
      caller: acme,
      query: "list_pull_requests",
      searchType: SearchType.EXACT,
    });
    expect(response.tools.map((tool) => tool.name)).toEqual(["github.list_pull_requests"]);
    expect(response.tools[0]?.score).toBe(1);
  });

  it("never returns a tool the static policy denies, even to regex .*", async () => {
    const response = await client().searchTools({
      caller: acme,
      query: ".*",
      searchType: SearchType.REGEX,
      limit: 20,
    });
    expect(response.tools.map((tool) => tool.name)).not.toContain("github.delete_repository");
  });

  it("never shows a tenant tools its visibility rules hide, nor counts them", async () => {
    const response = await client().searchTools({
      caller: globex,
      query: ".*",
      searchType: SearchType.REGEX,
      limit: 20,
    });
    expect(response.tools.map((tool) => tool.name)).toEqual(["slack.send_message"]);
    expect(response.totalDeferred).toBe(1);
  });

  it("stops returning a tool once it is activated, unless already-visible tools are asked for", async () => {
    const caller = { tenantId: "acme", sessionId: "s-search", runId: "r-search" };
    const query = { caller, query: "list open pull requests" };
    expect((await client().searchTools(query)).tools[0]?.name).toBe("github.list_pull_requests");
    await client().activateTools({ caller, names: ["github.list_pull_requests"] });
    const after = await client().searchTools(query);
    expect(after.tools.map((tool) => tool.name)).not.toContain("github.list_pull_requests");
    const withVisible = await client().searchTools({ ...query, includeAlwaysLoaded: true });
    expect(withVisible.tools[0]?.name).toBe("github.list_pull_requests");
  });

  it("answers an invalid regex with INVALID_ARGUMENT and the parser's message", async () => {
    await expect(
      client().searchTools({ caller: acme, query: "(", searchType: SearchType.REGEX }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
  });

  it("rejects a limit above 20 with INVALID_ARGUMENT", async () => {
    await expect(client().searchTools({ caller: acme, query: "issue", limit: 21 })).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
  });
});

describe("SearchTools scores and match quality", () => {
  it("reports each hit's lexical part, and that semantic ranking is off when the configuration turns it off", async () => {
    const response = await client().searchTools({ caller: acme, query: "open an issue on github" });
    expect(response.tools.length).toBeGreaterThan(0);
    // Earlier tests' choices taught this tenant (docs/search.md "Learning from use"): a learned score
    // moves the lexical one by half of the way to 1 (or to 0), and nothing else takes part.
    for (const hit of response.tools) {
      const l = hit.learnedScore;
      const lifted =
        l >= 0 ? hit.lexicalScore + 0.5 * l * (1 - hit.lexicalScore) : hit.lexicalScore * (1 + 0.5 * l);
      expect(hit.score).toBeCloseTo(lifted, 12);
      expect(hit.semanticScore).toBe(0);
    }
    expect(response.semanticStatus).toBe(SemanticStatus.OFF);
    expect(response.semanticPending).toBe(0);
  });

  it("repairs a misspelled word and says how it read it", async () => {
    const response = await client().searchTools({ caller: acme, query: "open an isssue on github" });
    expect(response.tools[0]?.name).toBe("github.create_issue");
    expect(response.queryRewrites).toEqual([
      expect.objectContaining({ from: "isssue", to: "issue", kind: QueryRewrite_Kind.TYPO }),
    ]);
  });

  it("says NONE when nothing matched", async () => {
    const response = await client().searchTools({ caller: acme, query: "zzqxv" });
    expect(response.tools).toEqual([]);
    expect(response.matchQuality).toBe(MatchQuality.NONE);
  });

  it("says GOOD when the best hit reaches the good-match threshold", async () => {
    const response = await client().searchTools({
      caller: acme,
      query: "create_issue",
      searchType: SearchType.EXACT,
    });
    expect(response.tools[0]?.score).toBe(1);
    expect(response.matchQuality).toBe(MatchQuality.GOOD);
  });

  it("drops hits below min_score, one threshold per hit", async () => {
    const query = { caller: acme, query: "list|repository", searchType: SearchType.REGEX, limit: 20 };
    const all = await client().searchTools(query);
    const names = (minScore: number) => all.tools.filter((t) => t.score >= minScore).map((t) => t.name);
    const threshold = Math.max(...all.tools.map((t) => t.score));
    const kept = await client().searchTools({ ...query, minScore: threshold });
    expect(kept.tools.map((t) => t.name)).toEqual(names(threshold));
    expect(kept.tools.length).toBeLessThan(all.tools.length);
  });

  it.each([-0.1, 1.5, Number.NaN])(
    "rejects min_score %s with INVALID_ARGUMENT naming the field",
    async (minScore) => {
      const error = await failure(client().searchTools({ caller: acme, query: "issue", minScore }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toMatch(/^min_score must be 0–1, got /);
    },
  );
});

describe("GetTools", () => {
  it("returns schemas and examples of visible tools", async () => {
    const response = await client().getTools({
      caller: acme,
      names: ["github.create_issue"],
      includeSchemas: true,
      includeExamples: true,
    });
    expect(response.tools[0]?.argsSchema).toMatchObject({ required: ["repo", "title"] });
    expect(response.tools[0]?.examples[0]?.args).toEqual({ repo: "acme/api", title: "Crash" });
  });

  it("reports a hidden tool beside allowed ones exactly like a missing one", async () => {
    const response = await client().getTools({
      caller: globex,
      names: ["slack.send_message", "github.create_issue", "github.no_such_tool"],
    });
    expect(response.tools.map((tool) => tool.name)).toEqual(["slack.send_message"]);
    expect(response.notFound).toEqual(["github.create_issue", "github.no_such_tool"]);
  });
});

describe("activation", () => {
  it("activates a deferred tool on first use, streams tool_activated, and appends it to the prompt", async () => {
    const caller = { tenantId: "acme", sessionId: "s-act", runId: "r-act" };
    const before = await client().renderToolPrompt({ caller });
    const watch = client().watchToolEvents({
      caller,
      filter: { types: ["tool_activated"], sessionId: "s-act" },
    });
    const iterator = watch[Symbol.asyncIterator]();
    await iterator.next(); // status

    const first = await client().resolveTool({ caller, name: "github.create_issue" });
    expect(first.activated).toBe(true);
    expect(first.tool?.argsSchema).toBeDefined();
    const again = await client().resolveTool({ caller, name: "github.create_issue" });
    expect(again.activated).toBe(false);

    const event = await iterator.next();
    expect(event.value?.message).toMatchObject({
      case: "event",
      value: { type: "tool_activated", attributes: { tool: "github.create_issue", scope: "run" } },
    });
    await iterator.return?.();

    const after = await client().renderToolPrompt({ caller });
    expect(after.visibleTools).toEqual([...before.visibleTools, "github.create_issue"]);
    expect(after.text.startsWith(before.text.slice(0, before.text.lastIndexOf("</tool>") + 7))).toBe(true);
  });

  it("answers a hidden tool and a missing tool with the same NOT_FOUND", async () => {
    const hidden = await failure(client().resolveTool({ caller: globex, name: "github.create_issue" }));
    const missing = await failure(client().resolveTool({ caller: globex, name: "github.create_isue" }));
    expect(hidden).toMatchObject({ code: Code.NotFound });
    expect(missing).toMatchObject({ code: Code.NotFound });
    expect(hidden.message.replace("create_issue", "X")).toBe(missing.message.replace("create_isue", "X"));
  });

  it("refuses session scope without a session id (fails closed)", async () => {
    await expect(
      client().activateTools({
        caller: { tenantId: "acme", runId: "r-9" },
        names: ["github.create_issue"],
        scope: ActivationScope.SESSION,
      }),
    ).rejects.toMatchObject({ code: Code.FailedPrecondition });
  });

  it("keeps session activations across a restart", async () => {
    const caller = { tenantId: "acme", sessionId: "s-persist", runId: "r-p" };
    await client().activateTools({
      caller,
      names: ["github.list_pull_requests"],
      scope: ActivationScope.SESSION,
    });
    await wayfind.stop({ keepData: true });
    wayfind = await startRouterServer(wayfind.configYaml, { dataDir: wayfind.dataDir });
    const listed = await client().listTools({ caller: { ...caller, runId: "r-new" } });
    expect(listed.tools.find((tool) => tool.name === "github.list_pull_requests")).toMatchObject({
      visible: true,
    });
  });
});

describe("aliases and lazy groups", () => {
  it("resolves an old name to the canonical tool", async () => {
    const caller = { tenantId: "acme", sessionId: "s-alias", runId: "r-alias" };
    const response = await client().resolveTool({ caller, name: "github.new_issue" });
    expect(response.tool?.name).toBe("github.create_issue");
  });

  it("activates a lazy group for the run when the user message mentions its trigger", async () => {
    const caller = { tenantId: "acme", sessionId: "s-lazy", runId: "r-lazy" };
    const quiet = await client().renderToolPrompt({ caller, hintMessage: "summarise the open issues" });
    expect(quiet.visibleTools).not.toContain("slack.send_message");
    const triggered = await client().renderToolPrompt({ caller, hintMessage: "post the summary to Slack" });
    expect(triggered.visibleTools).toContain("slack.send_message");
  });

  it("activates every tool of a lazy group larger than one activation call takes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-tools-lazy-"));
    const stock = Array.from({ length: 150 }, (_, i) => ({
      name: `count_bin_${i}`,
      description: `Count the stock in warehouse bin ${i}.`,
    }));
    writeFileSync(join(dir, "warehouse.jsonl"), stock.map((tool) => JSON.stringify(tool)).join("\n"));
    const server = await startRouterServer(
      {
        catalogs: [{ path: "warehouse.jsonl", namespace: "warehouse", loading_mode: "deferred" }],
        lazy_tool_groups: [{ name: "stock", tools: ["warehouse.*"], triggers: { keywords: ["inventory"] } }],
      },
      { dataDir: dir },
    );
    try {
      const caller = { tenantId: "acme", sessionId: "s-big", runId: "r-big" };
      const response = await server
        .grpc(ToolDiscoveryService)
        .renderToolPrompt({ caller, hintMessage: "start the yearly inventory" });
      expect(response.visibleTools).toHaveLength(150);
    } finally {
      await server.stop();
    }
  });

  it("never activates a lazy group tool the caller may not see", async () => {
    const caller = { tenantId: "acme", sessionId: "s-lazy2", runId: "r-lazy2", narrowToTools: ["github.*"] };
    const response = await client().renderToolPrompt({ caller, hintMessage: "post it to slack" });
    expect(response.visibleTools).not.toContain("slack.send_message");
  });
});

describe("rendering and payloads", () => {
  it("renders an Anthropic payload with the cache breakpoint on the last always-loaded tool", async () => {
    const response = await client().renderToolPayload({ caller: acme, provider: Provider.ANTHROPIC });
    const payload = JSON.parse(response.payloadJson) as { name: string; cache_control?: unknown }[];
    expect(payload[response.breakpointIndex]?.cache_control).toEqual({ type: "ephemeral" });
    // Provider tool names allow no dots; the mapping resolves a model's call back.
    expect(payload[0]?.name).toBe("github__read_file");
    expect(response.nameMappings).toContainEqual(
      expect.objectContaining({ providerName: "github__read_file", toolName: "github.read_file" }),
    );
  });

  it("estimates the payload's tokens with the estimator every other budget uses", async () => {
    const response = await client().renderToolPayload({ caller: acme, provider: Provider.OPENAI });
    expect(response.tokenEstimate).toBe(estimateTokens(response.payloadJson));
  });

  it("hands out the discovery tools with schemas and examples", async () => {
    const response = await client().getDiscoveryTools({ caller: acme, includeSkillTools: true });
    expect(response.tools.map((tool) => tool.name)).toEqual([
      "tool_search",
      "tool_get",
      "skill_search",
      "skill_get",
      "skill_list",
    ]);
    expect(response.tools[0]?.examples.length).toBeGreaterThanOrEqual(2);
  });
});

describe("RegisterTools", () => {
  it("reports an unchanged catalog as a no-op with the same fingerprint", async () => {
    const tools = [
      { name: "ping", description: "Check the service is alive.", loadingMode: LoadingMode.DEFERRED },
    ];
    const first = await client().registerTools({ caller: acme, source: "svc", namespace: "svc", tools });
    const second = await client().registerTools({ caller: acme, source: "svc", namespace: "svc", tools });
    expect(first.added).toBe(1);
    expect(second).toMatchObject({
      added: 0,
      updated: 0,
      unchanged: 1,
      catalogFingerprint: first.catalogFingerprint,
    });
  });

  it("rejects an example that does not match the tool's schema, naming tool and field", async () => {
    const error = await failure(
      client().registerTools({
        caller: acme,
        source: "svc2",
        tools: [
          {
            name: "svc2.add",
            description: "Add two numbers.",
            argsSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"] },
            examples: [{ args: { a: "one" } }],
          },
        ],
      }),
    );
    expect(error).toMatchObject({ code: Code.InvalidArgument });
    expect(error.message).toContain("svc2.add");
  });

  it("refuses args schemas that are not JSON Schemas, each tool named with the path, registering nothing", async () => {
    const error = await failure(
      client().registerTools({
        caller: acme,
        source: "svc3",
        tools: [
          { name: "svc3.fine", argsSchema: { type: "object" } },
          { name: "svc3.pay", argsSchema: { type: "objekt" } },
          { name: "svc3.refund", argsSchema: { type: "object", properties: { id: { type: "strng" } } } },
        ],
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(
      'tool "svc3.pay": args schema is not a valid JSON Schema at /type: "objekt" is not one of array, boolean, integer, null, number, object, string',
    );
    expect(error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual([
      "tools[1].args_schema",
      "tools[2].args_schema",
    ]);
    const listed = await client().listTools({ caller: acme, showAllTools: true, pageSize: 500 });
    expect(listed.tools.some((tool) => tool.name.startsWith("svc3."))).toBe(false);
  });
});

describe("a long name over each protocol", () => {
  // On a port: each protocol carries the message its own way (gRPC in a header, which has a size limit).
  let onPort: TestServer;
  beforeAll(async () => {
    onPort = await startTestServer();
  });
  afterAll(() => onPort.stop());

  it.each(["grpc", "connect", "grpcWeb"] as const)(
    "answers a 100,000-character name with a short NOT_FOUND over %s, quoting a bounded part",
    async (protocol) => {
      const error = await failure(
        onPort[protocol](ToolDiscoveryService).resolveTool({ name: "n".repeat(100_000) }),
      );
      expect(error.code).toBe(Code.NotFound);
      expect(error.rawMessage).toBe(
        `tool "${"n".repeat(100)}"… (100000 characters) not found; use tool_search to find tools`,
      );
    },
  );
});
