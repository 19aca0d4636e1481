import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  CreateMessageResultSchema,
  ListRootsRequestSchema,
  ListRootsResultSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import {
  type HttpMcpServer,
  startHttpMcpServer,
  startSseMcpServer,
  type ToolSpec,
} from "../sources/mcp-servers.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Issue 45: what an MCP server behind wayfind asks the client while it serves a call — sampling,
 * elicitation, roots — reaches the session that made the call and nobody else, across tenants and
 * concurrent sessions; a server that asks too much, too late, of a session that is gone, or of a
 * gRPC caller that has no client, is refused with a JSON-RPC error it reads, and nothing stalls.
 */

const acme = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const bravo = apiKey("bravo-agent", { tenant: "bravo", roles: ["agent"] });
const carol = apiKey("carol-agent", { tenant: "carol", roles: ["agent"] });

const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const errorOf = (error: unknown) => {
  const { code, message } = error as { code?: number; message?: string };
  return { code, message: String(message) };
};

/** What the upstream heard of requests it made outside a call's answer (by the tool's text). */
const outcomes = new Map<string, { code?: number; message: string } | "answered">();
/** The progress tokens the upstream's calls came with (by the tool's text). */
const progressTokens = new Map<string, string | number>();

const sampling = (prompt: string) => ({
  method: "sampling/createMessage" as const,
  params: {
    messages: [{ role: "user" as const, content: { type: "text" as const, text: prompt } }],
    maxTokens: 10,
  },
});

/** Asks the client for a completion of the text and answers with it (or with why it was refused). */
const SAMPLE = {
  name: "sample",
  description: "Asks the client for a completion of the text and answers with it.",
  run: async (prompt: string, { extra }: Parameters<NonNullable<ToolSpec["run"]>>[1]) => {
    try {
      const answer = await extra.sendRequest(sampling(prompt), CreateMessageResultSchema);
      return text(answer.content.type === "text" ? answer.content.text : "");
    } catch (error) {
      const { code, message } = errorOf(error);
      return text(`refused ${code}: ${message}`);
    }
  },
};

let upstream: HttpMcpServer;
let legacy: Awaited<ReturnType<typeof startSseMcpServer>>;
let wayfind: TestServer;
beforeAll(async () => {
  upstream = await startHttpMcpServer([
    SAMPLE,
    {
      name: "roots",
      description: "Asks the client for its roots and answers with them.",
      run: async (_, { extra }) =>
        text(
          JSON.stringify((await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema)).roots),
        ),
    },
    {
      name: "capabilities",
      description: "Answers what the client declared to this server.",
      run: async (_, { session }) => text(JSON.stringify(session.getClientCapabilities() ?? {})),
    },
    {
      name: "flood",
      description:
        "Asks the client for 40 completions at once; answers how many were answered and why others were refused.",
      run: async (_, { extra }) => {
        const asked = await Promise.allSettled(
          Array.from({ length: 40 }, (_, i) =>
            extra.sendRequest(sampling(`flood ${i}`), CreateMessageResultSchema),
          ),
        );
        const refusals = asked.flatMap((outcome) =>
          outcome.status === "rejected"
            ? [`${errorOf(outcome.reason).code}: ${errorOf(outcome.reason).message}`]
            : [],
        );
        return text(
          JSON.stringify({ answered: asked.length - refusals.length, refusals: [...new Set(refusals)] }),
        );
      },
    },
    {
      name: "roots_later",
      description: "Answers at once, then asks the client for its roots a little later.",
      run: async (label, { session }) => {
        void sleep(300)
          .then(() => session.request({ method: "roots/list" }, ListRootsResultSchema, { timeout: 5_000 }))
          .then(
            () => outcomes.set(label, "answered"),
            (error: unknown) => outcomes.set(label, errorOf(error)),
          );
        return text("later");
      },
    },
    {
      name: "wait",
      description: "Keeps the call open until it is cancelled, noting its progress token.",
      run: async (label, { extra, signal }) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined) progressTokens.set(label, token);
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        return text("cancelled");
      },
    },
    {
      name: "meddle",
      description:
        "Sends progress naming the progress token of the call the text names, and asks for a completion.",
      run: async (label, { extra }) => {
        const token = progressTokens.get(label);
        if (token !== undefined)
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: 1, total: 2, message: "not yours" },
          });
        const answer = await extra.sendRequest(sampling("meddle"), CreateMessageResultSchema);
        return text(answer.content.type === "text" ? answer.content.text : "");
      },
    },
    {
      name: "ask_briefly",
      description:
        "Asks the client for a completion, gives up (cancelling it) after 300 ms, answers 700 ms later.",
      run: async (label, { extra }) => {
        await extra.sendRequest(sampling(label), CreateMessageResultSchema, { timeout: 300 }).then(
          () => outcomes.set(label, "answered"),
          (error: unknown) => outcomes.set(label, errorOf(error)),
        );
        await sleep(700);
        return text("gave up");
      },
    },
    {
      name: "ask_and_wait",
      description: "Asks the client for a completion and waits for it however long it takes.",
      run: async (label, { extra }) => {
        await extra.sendRequest(sampling(label), CreateMessageResultSchema, { timeout: 30_000 }).then(
          () => outcomes.set(label, "answered"),
          (error: unknown) => outcomes.set(label, errorOf(error)),
        );
        return text("done");
      },
    },
  ]);
  legacy = await startSseMcpServer([SAMPLE]);
  wayfind = await startTestServer({
    auth: { allow_unauthenticated: false, api_keys: [acme.entry, bravo.entry, carol.entry] },
    mcp_servers: [
      { name: "up", transport: "http", url: upstream.url, loading_mode: "always", call_timeout_seconds: 10 },
      // The same server with a short deadline, for what never answers.
      {
        name: "short",
        transport: "http",
        url: upstream.url,
        loading_mode: "always",
        call_timeout_seconds: 1,
      },
      // The older HTTP+SSE transport (MCP 2024-11-05).
      { name: "legacy", transport: "sse", url: legacy.url, loading_mode: "always" },
    ],
  });
}, 60_000);
afterAll(async () => {
  await wayfind?.stop();
  await upstream?.close();
  await legacy?.close();
});

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

/** An SDK client of wayfind's /mcp with `secret`, declaring `capabilities`. */
async function connect(secret: string, capabilities: Record<string, object> = {}): Promise<Client> {
  const client = new Client({ name: "client-requests-test", version: "1.0.0" }, { capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${wayfind.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${secret}` } },
    }),
  );
  clients.push(client);
  return client;
}

/** Answers every sampling request with `<label> answers "<prompt>"`, after `delayMs`; counts them. */
function answerSampling(client: Client, label: string, delayMs = 0): { asked: string[] } {
  const asked: string[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    const prompt = request.params.messages[0]?.content;
    const words = prompt !== undefined && !Array.isArray(prompt) && prompt.type === "text" ? prompt.text : "";
    asked.push(words);
    await sleep(delayMs);
    return {
      role: "assistant",
      model: "test",
      content: { type: "text", text: `${label} answers "${words}"` },
    };
  });
  return { asked };
}

const textOf = (result: unknown) =>
  ((result as { content: { text?: string }[] }).content ?? []).map((block) => block.text ?? "").join("");

describe("routing to the calling session", () => {
  it("sends each server request to the session whose call made it, across two tenants' concurrent sessions", async () => {
    const sessions = await Promise.all(
      [
        ["acme-1", acme],
        ["acme-2", acme],
        ["bravo-1", bravo],
        ["bravo-2", bravo],
      ].map(async ([label, key]) => {
        const name = label as string;
        const client = await connect((key as typeof acme).secret, { sampling: {} });
        return { name, client, heard: answerSampling(client, name, Math.floor(Math.random() * 30)) };
      }),
    );
    const calls = sessions.flatMap(({ name, client }) =>
      [1, 2, 3].map(async (n) => ({
        name,
        answer: textOf(await client.callTool({ name: "up.sample", arguments: { text: `${name} #${n}` } })),
      })),
    );
    for (const { name, answer } of await Promise.all(calls))
      expect(answer).toMatch(new RegExp(`^${name} answers "${name} #[123]"$`));
    for (const { name, heard } of sessions)
      expect(heard.asked.sort()).toEqual([`${name} #1`, `${name} #2`, `${name} #3`]);
  }, 30_000);

  it("declares sampling, elicitation and roots upstream only as the session's client declared them", async () => {
    const samples = await connect(acme.secret, { sampling: {} });
    const everything = await connect(acme.secret, {
      sampling: {},
      elicitation: { form: {} },
      roots: { listChanged: true },
    });
    const nothing = await connect(acme.secret);
    const declared = async (client: Client) =>
      JSON.parse(textOf(await client.callTool({ name: "up.capabilities", arguments: { text: "" } })));
    expect(await declared(samples)).toEqual({ sampling: {} });
    expect(await declared(everything)).toEqual({
      sampling: {},
      elicitation: { form: {} },
      roots: { listChanged: true },
    });
    expect(await declared(nothing)).toEqual({});
  });

  it("refuses a server's request during a gRPC CallTool, or a session that did not declare it, in words the server reads", async () => {
    const grpc = clientWith(ToolDiscoveryService, wayfind.baseUrl, acme.secret);
    const called = await grpc.callTool({
      caller: { tenantId: "acme", sessionId: "s", runId: "r" },
      name: "up.sample",
      arguments: { text: "hello" },
    });
    const refusal =
      "refused -32601: MCP error -32601: there is no client to answer sampling/createMessage through wayfind: " +
      "this connection serves calls whose caller did not declare sampling (a gRPC CallTool, or an MCP session without it)";
    expect(JSON.stringify(called.content)).toContain(JSON.stringify(refusal).slice(1, -1));
    const undeclared = await connect(acme.secret);
    expect(textOf(await undeclared.callTool({ name: "up.sample", arguments: { text: "hello" } }))).toBe(
      refusal,
    );
  });

  it("never passes a server's progress or requests on one session's connection to another session", async () => {
    const waiting = await connect(acme.secret, { sampling: {} });
    const waiter = answerSampling(waiting, "waiter");
    const progress: unknown[] = [];
    const open = waiting.callTool({ name: "up.wait", arguments: { text: "victim" } }, undefined, {
      onprogress: (report) => progress.push(report),
      timeout: 20_000,
    });
    await expect.poll(() => progressTokens.has("victim")).toBe(true);
    const meddler = await connect(acme.secret, { sampling: {} });
    const heard = answerSampling(meddler, "meddler");
    expect(textOf(await meddler.callTool({ name: "up.meddle", arguments: { text: "victim" } }))).toBe(
      'meddler answers "meddle"',
    );
    expect(heard.asked).toEqual(["meddle"]);
    expect(waiter.asked).toEqual([]);
    expect(progress).toEqual([]);
    await waiting.close();
    await open.catch(() => undefined);
  }, 30_000);
});

describe("roots, and servers on the older HTTP+SSE transport", () => {
  it("answers a server's roots/list with the session's roots, and forwards the client's roots changes", async () => {
    const client = await connect(acme.secret, { roots: { listChanged: true } });
    let roots = [{ uri: "file:///work/one", name: "one" }];
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
    const listed = await client.callTool({ name: "up.roots", arguments: { text: "" } });
    expect(JSON.parse(textOf(listed))).toEqual(roots);
    const before = upstream.rootsChanges();
    roots = [{ uri: "file:///work/two", name: "two" }];
    await client.sendRootsListChanged();
    await expect.poll(() => upstream.rootsChanges()).toBe(before + 1);
    expect(JSON.parse(textOf(await client.callTool({ name: "up.roots", arguments: { text: "" } })))).toEqual(
      roots,
    );
  });

  it("syncs, calls and passes sampling through a server on the older HTTP+SSE transport", async () => {
    const client = await connect(bravo.secret, { sampling: {} });
    const heard = answerSampling(client, "bravo");
    const called = await client.callTool({ name: "legacy.sample", arguments: { text: "over sse" } });
    expect(textOf(called)).toBe('bravo answers "over sse"');
    expect(heard.asked).toEqual(["over sse"]);
  });
});

describe("what an upstream may not do", () => {
  it("bounds the requests waiting on one session's client (16): the rest are refused at once, other sessions unaffected", async () => {
    const flooded = await connect(acme.secret, { sampling: {} });
    let waiting = 0;
    let most = 0;
    flooded.setRequestHandler(CreateMessageRequestSchema, async () => {
      most = Math.max(most, ++waiting);
      await sleep(300);
      waiting--;
      return { role: "assistant", model: "test", content: { type: "text", text: "ok" } };
    });
    const other = await connect(bravo.secret, { sampling: {} });
    answerSampling(other, "other");
    const [flood, meanwhile] = await Promise.all([
      flooded.callTool({ name: "up.flood", arguments: { text: "" } }),
      sleep(100).then(() => other.callTool({ name: "up.sample", arguments: { text: "still here" } })),
    ]);
    expect(JSON.parse(textOf(flood))).toEqual({
      answered: 16,
      refusals: [
        "-32600: MCP error -32600: the client already has 16 requests to answer, the most wayfind lets wait; " +
          "ask again once it has answered",
      ],
    });
    expect(most).toBe(16);
    expect(textOf(meanwhile)).toBe('other answers "still here"');
  }, 30_000);

  it("gives one tenant's sessions at most 64 connections of their own to a server (a stdio server's processes)", async () => {
    const sessions = await Promise.all(
      Array.from({ length: 64 }, () => connect(carol.secret, { sampling: {} })),
    );
    for (const session of sessions)
      await session.callTool({ name: "up.capabilities", arguments: { text: "" } });
    const extra = await connect(carol.secret, { sampling: {} });
    const refused = await extra.callTool({ name: "up.capabilities", arguments: { text: "" } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe(
      '64 sessions of your tenant already have a connection of their own to MCP server "up" (sessions that answer ' +
        "its requests, set a log level or subscribe), the most wayfind opens; end a session you no longer use",
    );
    // Another tenant, and a session that declared nothing (the tenant's connection), are unaffected.
    const other = await connect(bravo.secret, { sampling: {} });
    expect(textOf(await other.callTool({ name: "up.capabilities", arguments: { text: "" } }))).toBe(
      '{"sampling":{}}',
    );
    const plain = await connect(carol.secret);
    expect(textOf(await plain.callTool({ name: "up.capabilities", arguments: { text: "" } }))).toBe("{}");
    // A session that ends gives its place up.
    await (sessions[0]?.transport as StreamableHTTPClientTransport | undefined)?.terminateSession();
    await expect
      .poll(async () => textOf(await extra.callTool({ name: "up.capabilities", arguments: { text: "" } })))
      .toBe('{"sampling":{}}');
  }, 60_000);

  it("refuses roots asked of a session that has ended, asking no client", async () => {
    const ending = await connect(acme.secret, { roots: { listChanged: true } });
    let asked = 0;
    ending.setRequestHandler(ListRootsRequestSchema, async () => {
      asked++;
      return { roots: [] };
    });
    expect(textOf(await ending.callTool({ name: "up.roots_later", arguments: { text: "gone" } }))).toBe(
      "later",
    );
    await (ending.transport as StreamableHTTPClientTransport).terminateSession();
    await ending.close();
    // wayfind ended its session with the server along with the client's: the server cannot even send
    // the request (its SDK says so), rather than waiting out its timeout for an answer.
    await expect
      .poll(() => outcomes.get("gone"), { timeout: 3_000 })
      .toEqual({
        code: undefined,
        message: "Not connected",
      });
    expect(asked).toBe(0);
  }, 15_000);

  it("ends a call whose server never answers at call_timeout_seconds, and tells the server to cancel it", async () => {
    const client = await connect(acme.secret);
    const before = upstream.cancellations();
    const started = Date.now();
    const result = await client.callTool({ name: "short.wait", arguments: { text: "forever" } });
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('MCP server "short" did not answer the call of "wait" within 1000 ms');
    await expect.poll(() => upstream.cancellations()).toBeGreaterThan(before);
  }, 15_000);

  it("passes a server's cancellation of its request on to the client", async () => {
    const slow = await connect(acme.secret, { sampling: {} });
    let cancelledAt = Number.POSITIVE_INFINITY;
    slow.setRequestHandler(
      CreateMessageRequestSchema,
      (_, extra) =>
        new Promise((_resolve, reject) =>
          extra.signal.addEventListener("abort", () => {
            cancelledAt = Date.now();
            reject(new Error("cancelled"));
          }),
        ),
    );
    const called = await slow.callTool({ name: "up.ask_briefly", arguments: { text: "brief" } });
    expect(textOf(called)).toBe("gave up");
    expect(outcomes.get("brief")).toMatchObject({ code: -32001 });
    // Told when the server gave up, not only when its call ended 700 ms later.
    expect(Date.now() - cancelledAt).toBeGreaterThan(300);
  });

  it("cancels a request the client never answers once the call it came with ends, and refuses it upstream", async () => {
    const silent = await connect(acme.secret, { sampling: {} });
    let cancelled = false;
    silent.setRequestHandler(
      CreateMessageRequestSchema,
      (_, extra) =>
        new Promise((_resolve, reject) =>
          extra.signal.addEventListener("abort", () => {
            cancelled = true;
            reject(new Error("cancelled"));
          }),
        ),
    );
    const result = await silent.callTool({ name: "short.ask_and_wait", arguments: { text: "unanswered" } });
    expect(textOf(result)).toBe(
      'MCP server "short" did not answer the call of "ask_and_wait" within 1000 ms',
    );
    await expect.poll(() => cancelled).toBe(true);
    await expect
      .poll(() => outcomes.get("unanswered"))
      .toEqual({
        code: -32600,
        message:
          "MCP error -32600: the call this request came with has ended; wayfind stopped waiting for the client's answer",
      });
  }, 15_000);
});
