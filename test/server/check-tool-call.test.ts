import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ActivationScope, LoadingMode, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

// Issue 18 "Validation of dispatched calls": CheckToolCall, over the real server.
const caller = { tenantId: "acme", runId: "dispatch-run" };
const refund = {
  name: "billing.refund_payment",
  description: "Refund a payment to the customer.",
  loadingMode: LoadingMode.DEFERRED,
  argsSchema: {
    type: "object",
    properties: {
      payment_id: { type: "string", pattern: "^pay_[a-z0-9]+$" },
      amount: { type: "number", minimum: 0 },
      currency: { type: "string", enum: ["USD", "EUR"] },
    },
    required: ["payment_id", "amount"],
    additionalProperties: false,
  },
};

let wayfind: RouterTestServer;
beforeAll(async () => {
  wayfind = await startRouterServer({});
  await tools().registerTools({ caller, source: "billing", tools: [refund] });
  await tools().registerTools({
    caller: { tenantId: "globex" },
    source: "secret",
    tools: [{ name: "globex.wire_funds", description: "Wire funds.", loadingMode: LoadingMode.DEFERRED }],
  });
});
afterAll(() => wayfind.stop());

const tools = () => wayfind.grpc(ToolDiscoveryService);

describe("CheckToolCall", () => {
  it("reports every problem of the arguments by path, with a message for the model, and activates nothing", async () => {
    const checked = await tools().checkToolCall({
      caller,
      name: refund.name,
      arguments: { payment_id: "PAY-1", currency: "GBP", note: "x" },
    });
    expect(checked.valid).toBe(false);
    expect(checked.activated).toBe(false);
    expect(checked.problems.map((p) => p.path).sort()).toEqual(["", "/amount", "/currency", "/payment_id"]);
    expect(checked.repairMessage).toContain(
      "The arguments of billing.refund_payment do not match its schema",
    );
    expect(checked.repairMessage).toContain("- amount: must have required property 'amount'");
    expect(checked.repairMessage).toContain('- payment_id: must match pattern "^pay_[a-z0-9]+$"');
    const listed = await tools().listTools({ caller });
    expect(listed.tools.map((t) => t.name)).not.toContain(refund.name);
  });

  it("accepts matching arguments and activates the deferred tool for the run, returning its definition", async () => {
    const checked = await tools().checkToolCall({
      caller,
      name: refund.name,
      arguments: { payment_id: "pay_123", amount: 12.5, currency: "EUR" },
    });
    expect(checked).toMatchObject({ valid: true, problems: [], repairMessage: "", activated: true });
    expect(checked.scope).toBe(ActivationScope.RUN);
    expect(checked.tool?.argsSchema).toBeDefined();
    const again = await tools().checkToolCall({
      caller,
      name: refund.name,
      arguments: { payment_id: "pay_1", amount: 1 },
    });
    expect(again).toMatchObject({ valid: true, activated: false });
  });

  it("answers another tenant's tool exactly as one that exists nowhere", async () => {
    const hidden = await failure(tools().checkToolCall({ caller, name: "globex.wire_funds", arguments: {} }));
    const missing = await failure(
      tools().checkToolCall({ caller, name: "nobody.wire_funds", arguments: {} }),
    );
    expect(hidden.code).toBe(Code.NotFound);
    expect(hidden.rawMessage.replace("globex", "nobody")).toBe(missing.rawMessage);
  });

  it("checks a tool with a large schema (compiled off the event loop) the same way", async () => {
    const run = { tenantId: "acme", runId: "dispatch-large" };
    const properties = Object.fromEntries(
      Array.from({ length: 200 }, (_, p) => [`p${p}`, { type: "integer", minimum: 0 }]),
    );
    await tools().registerTools({
      caller: run,
      source: "wide",
      tools: [
        {
          name: "wide.configure",
          description: "Set many knobs.",
          loadingMode: LoadingMode.DEFERRED,
          argsSchema: { type: "object", properties, required: ["p3"] },
        },
      ],
    });
    const bad = await tools().checkToolCall({ caller: run, name: "wide.configure", arguments: { p9: -1 } });
    expect(bad.valid).toBe(false);
    expect(bad.problems.map((p) => p.path).sort()).toEqual(["/p3", "/p9"]);
    expect(bad.activated).toBe(false);

    const good = await tools().checkToolCall({ caller: run, name: "wide.configure", arguments: { p3: 1 } });
    expect(good.valid).toBe(true);
    expect(good.activated).toBe(true);
  });

  it("needs the name the model called", async () => {
    expect((await failure(tools().checkToolCall({ caller, arguments: {} }))).code).toBe(Code.InvalidArgument);
  });
});

describe("RenderToolPayload in dispatch mode", () => {
  it.each([Provider.ANTHROPIC, Provider.OPENAI, Provider.GEMINI])(
    "keeps the tools array byte-identical across activations (provider %s)",
    async (provider) => {
      const run = { tenantId: "acme", runId: `dispatch-payload-${provider}` };
      const render = () => tools().renderToolPayload({ caller: run, provider, dispatch: true });
      const before = await render();
      expect(before.payloadJson).toContain("tool_call");
      expect(before.payloadJson).toContain("tool_search");
      expect(before.payloadJson).not.toContain("refund_payment");

      const checked = await tools().checkToolCall({
        caller: run,
        name: refund.name,
        arguments: { payment_id: "pay_9", amount: 3 },
      });
      expect(checked.activated).toBe(true);
      const after = await render();
      expect(after.payloadJson).toBe(before.payloadJson);
      expect(after.prefixHash).toBe(before.prefixHash);

      // Without dispatch, the activation appends the tool (the cache-rewriting case dispatch avoids).
      const appended = await tools().renderToolPayload({ caller: run, provider });
      expect(appended.payloadJson).toContain("refund_payment");
    },
  );

  it("refuses dispatch together with native search", async () => {
    const error = await failure(
      tools().renderToolPayload({ caller, provider: Provider.ANTHROPIC, dispatch: true, nativeSearch: true }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
  });

  it("GetDiscoveryTools adds tool_call when asked for dispatch", async () => {
    const names = async (dispatch: boolean) =>
      (await tools().getDiscoveryTools({ caller, dispatch })).tools.map((tool) => tool.name);
    expect(await names(true)).toContain("tool_call");
    expect(await names(false)).not.toContain("tool_call");
  });
});

describe("RenderToolPrompt in dispatch mode", () => {
  it("keeps the prompt byte-identical across activations and tells the model to use tool_call", async () => {
    const run = { tenantId: "acme", runId: "dispatch-prompt" };
    const render = (dispatch: boolean) => tools().renderToolPrompt({ caller: run, dispatch });
    const before = await render(true);
    expect(before.text).toContain("through\ntool_call");

    await tools().checkToolCall({
      caller: run,
      name: refund.name,
      arguments: { payment_id: "pay_9", amount: 3 },
    });
    const after = await render(true);
    expect(after.text).toBe(before.text);
    expect(after.visibleTools).not.toContain(refund.name);

    // Without dispatch the activated tool is appended to the prompt (and so re-writes what follows it).
    expect((await render(false)).visibleTools).toContain(refund.name);
  });
});

describe("config tool_search.dispatch: true", () => {
  it("makes dispatch the default of both the payload and the prompt", async () => {
    const dispatching = await startRouterServer({ tool_search: { dispatch: true } });
    try {
      const client = dispatching.grpc(ToolDiscoveryService);
      const run = { tenantId: "acme", runId: "dispatch-default" };
      await client.registerTools({ caller: run, source: "billing", tools: [refund] });
      const payload = () => client.renderToolPayload({ caller: run, provider: Provider.ANTHROPIC });
      const prompt = () => client.renderToolPrompt({ caller: run });
      const [payloadBefore, promptBefore] = [await payload(), await prompt()];
      expect(payloadBefore.payloadJson).toContain("tool_call");

      await client.checkToolCall({
        caller: run,
        name: refund.name,
        arguments: { payment_id: "pay_1", amount: 1 },
      });
      expect((await payload()).payloadJson).toBe(payloadBefore.payloadJson);
      expect((await prompt()).text).toBe(promptBefore.text);
    } finally {
      await dispatching.stop();
    }
  });
});

describe("a dispatch-mode session", () => {
  const more = ["billing.void_invoice", "billing.pause_subscription"];
  const calls: [string, JsonObject][] = [
    [refund.name, { payment_id: "pay_7", amount: 2 }],
    ...more.map((name): [string, JsonObject] => [name, {}]),
  ];
  // What a provider caches, in its order: the tools, then the system prompt, then the messages.
  const request = async (caller: { tenantId: string; runId: string }, history: string[], dispatch: boolean) =>
    (await tools().renderToolPayload({ caller, provider: Provider.ANTHROPIC, dispatch })).payloadJson +
    (await tools().renderToolPrompt({ caller, dispatch })).text +
    history.join("");

  /** Plays the model reading each tool's definition (tool_get) and calling it; returns each turn's request. */
  async function session(runId: string, dispatch: boolean): Promise<string[]> {
    const run = { tenantId: "acme", runId };
    const history: string[] = [];
    const requests = [await request(run, history, dispatch)];
    for (const [name, args] of calls) {
      const got = await tools().getTools({ caller: run, names: [name], includeSchemas: true });
      history.push(`tool_get result: ${name} ${JSON.stringify(got.tools[0]?.argsSchema ?? {})}\n`);
      const checked = await tools().checkToolCall({ caller: run, name, arguments: args });
      expect(checked.activated).toBe(true);
      requests.push(await request(run, history, dispatch));
    }
    return requests;
  }

  beforeAll(async () => {
    await tools().registerTools({
      caller,
      source: "billing-more",
      tools: more.map((name) => ({ name, description: `${name}.`, loadingMode: LoadingMode.DEFERRED })),
    });
  });

  it("only ever appends to its request, so no activation re-writes the cached conversation", async () => {
    const requests = await session("dispatch-session", true);
    for (let turn = 1; turn < requests.length; turn++)
      expect((requests[turn] as string).startsWith(requests[turn - 1] as string)).toBe(true);
  });

  it("differs from the deferred payload, whose activations change what precedes the conversation", async () => {
    const requests = await session("deferred-session", false);
    expect((requests[1] as string).startsWith(requests[0] as string)).toBe(false);
  });
});
