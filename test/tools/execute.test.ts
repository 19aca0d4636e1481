import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { type HttpMcpServer, startHttpMcpServer } from "../sources/mcp-servers.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

/**
 * CallTool executes a tool of an MCP server behind wayfind: the result comes back as the server sent
 * it, and a slow, dead or flooding server costs its callers a clear error and nobody else anything.
 */

const caller = { tenantId: "acme", sessionId: "s-exec", runId: "r-exec" };
const IMAGE = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
/** Set by the slow tool when its call was cancelled upstream. */
let cancelledUpstream = false;
let releaseHeld: () => void = () => {};
/** Set by the hold tool once its call has arrived upstream. */
let holding = false;

let upstream: HttpMcpServer;
let flaky: HttpMcpServer;
let wayfind: RouterTestServer;
beforeAll(async () => {
  upstream = await startHttpMcpServer([
    { name: "echo", description: "Echo the text back." },
    {
      name: "render",
      description: "Render a chart as an image, with its numbers.",
      run: async (text) => ({
        content: [{ type: "text", text: `chart of ${text}` }, IMAGE],
        structuredContent: { points: 3, title: text },
      }),
    },
    {
      name: "fail",
      description: "Fail the way a tool reports failure.",
      run: async () => ({ content: [{ type: "text", text: "quota exceeded" }], isError: true }),
    },
    {
      name: "sleep",
      description: "Take a long time to answer.",
      run: (_, { signal }) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "late" }] }), 10_000);
          signal.addEventListener("abort", () => {
            cancelledUpstream = true;
            clearTimeout(timer);
          });
        }),
    },
    {
      name: "hold",
      description: "Answer once released.",
      run: () =>
        new Promise((resolve) => {
          holding = true;
          releaseHeld = () => resolve({ content: [{ type: "text", text: "released" }] });
        }),
    },
    {
      name: "flood",
      description: "Answer with more text than an answer may hold.",
      run: async () => ({ content: [{ type: "text", text: "x".repeat(5 * 1024 * 1024) }] }),
    },
  ]);
  flaky = await startHttpMcpServer([{ name: "echo", description: "Echo the text back." }]);
  wayfind = await startRouterServer({
    mcp_servers: [
      { name: "up", transport: "http", url: upstream.url, call_timeout_seconds: 30, max_concurrent_calls: 1 },
      { name: "flaky", transport: "http", url: flaky.url, breaker: { failures: 3, open_seconds: 1 } },
    ],
  });
}, 60_000);
afterAll(async () => {
  await wayfind.stop();
  await upstream.close();
  await flaky.close();
});

const tools = () => wayfind.grpc(ToolDiscoveryService);

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("the call succeeded");
}

describe("results", () => {
  it("returns the server's content blocks and structured content unchanged", async () => {
    const called = await tools().callTool({ caller, name: "up.render", arguments: { text: "sales" } });
    expect(called).toMatchObject({
      tool: "up.render",
      source: "mcp:up",
      content: [{ type: "text", text: "chart of sales" }, IMAGE],
      structuredContent: { points: 3, title: "sales" },
      isError: false,
    });
  });

  it("passes a failure the tool reports on as is_error with its words", async () => {
    const called = await tools().callTool({ caller, name: "up.fail", arguments: { text: "x" } });
    expect(called.isError).toBe(true);
    expect(called.content).toEqual([{ type: "text", text: "quota exceeded" }]);
  });

  it("refuses a result larger than an answer may hold, saying so", async () => {
    const error = await failure(tools().callTool({ caller, name: "up.flood", arguments: { text: "x" } }));
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toMatch(/bytes of JSON, more than the \d+ wayfind passes on/);
  });
});

describe("what wayfind does not send", () => {
  it("refuses a tool that no MCP server listed (FAILED_PRECONDITION), naming who runs it", async () => {
    await tools().registerTools({
      caller,
      source: "app",
      tools: [{ name: "app.local", description: "Runs in the agent.", argsSchema: { type: "object" } }],
    });
    const error = await failure(tools().callTool({ caller, name: "app.local", arguments: {} }));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toContain("the agent runtime runs it");
  });

  it("refuses arguments that do not match the schema (INVALID_ARGUMENT) with what to repair", async () => {
    const error = await failure(tools().callTool({ caller, name: "up.echo", arguments: { text: 42 } }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("do not match its schema");
  });
});

describe("slow and dead servers", () => {
  it("cuts a call past its timeout (DEADLINE_EXCEEDED) and cancels it upstream", async () => {
    cancelledUpstream = false;
    const error = await failure(
      tools().callTool({ caller, name: "up.sleep", arguments: { text: "x" }, timeoutSeconds: 1 }),
    );
    expect(error.code).toBe(Code.DeadlineExceeded);
    expect(error.rawMessage).toContain("did not answer");
    await expect.poll(() => cancelledUpstream).toBe(true);
  });

  it("never cancels upstream a call that has answered", async () => {
    const before = upstream.cancellations();
    for (let i = 0; i < 5; i++) await tools().callTool({ caller, name: "up.echo", arguments: { text: "x" } });
    // One call that is cancelled: the session's notifications arrive in order, so once it is counted
    // any cancellation of the answered calls before it would have been too.
    await failure(
      tools().callTool({ caller, name: "up.sleep", arguments: { text: "x" }, timeoutSeconds: 1 }),
    );
    await expect.poll(() => upstream.cancellations()).toBeGreaterThan(before);
    expect(upstream.cancellations()).toBe(before + 1);
  });

  it("cancels the upstream call when the caller goes away", async () => {
    cancelledUpstream = false;
    const abort = new AbortController();
    const call = tools().callTool(
      { caller, name: "up.sleep", arguments: { text: "x" } },
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort(), 300);
    expect((await failure(call)).code).toBe(Code.Canceled);
    await expect.poll(() => cancelledUpstream).toBe(true);
  });

  it("queues a call past the server's max_concurrent_calls until a slot frees, within its timeout", async () => {
    holding = false;
    const held = tools().callTool({ caller, name: "up.hold", arguments: { text: "x" } });
    await expect.poll(() => holding).toBe(true);
    const queued = tools().callTool({ caller, name: "up.echo", arguments: { text: "queued" } });
    const impatient = await failure(
      tools().callTool({ caller, name: "up.echo", arguments: { text: "x" }, timeoutSeconds: 1 }),
    );
    expect(impatient.code).toBe(Code.DeadlineExceeded);
    expect(impatient.rawMessage).toContain("max_concurrent_calls");
    releaseHeld();
    expect((await held).content).toEqual([{ type: "text", text: "released" }]);
    expect((await queued).content).toEqual([{ type: "text", text: "queued" }]);
  });

  it("opens a server's breaker after its breaker.failures in a row, while other servers' calls go on", async () => {
    flaky.setDown(true);
    const codes: Code[] = [];
    for (let i = 0; i < 4; i++)
      codes.push(
        (await failure(tools().callTool({ caller, name: "flaky.echo", arguments: { text: "x" } }))).code,
      );
    expect(codes).toEqual([...Array(3).fill(Code.Unavailable), Code.ResourceExhausted]);
    const open = await failure(tools().callTool({ caller, name: "flaky.echo", arguments: { text: "x" } }));
    expect(open.rawMessage).toMatch(
      /failed 3 calls in a row \(mcp_servers\[\]\.breaker\.failures\); its calls are refused for 1 s more/,
    );
    const other = await tools().callTool({ caller, name: "up.echo", arguments: { text: "still here" } });
    expect(other.content).toEqual([{ type: "text", text: "still here" }]);
  });

  it("lets a call through once the breaker's open_seconds have passed", async () => {
    flaky.setDown(false);
    await expect
      .poll(
        () =>
          tools()
            .callTool({ caller, name: "flaky.echo", arguments: { text: "back" } })
            .then(
              (called) => called.content,
              () => undefined,
            ),
        { timeout: 5_000, interval: 250 },
      )
      .toEqual([{ type: "text", text: "back" }]);
  });
});
