import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

// Issue 15 "Per-principal limits": calls per second and open watch streams, RESOURCE_EXHAUSTED with a retry hint.
const busy = apiKey("busy", { tenant: "acme", roles: ["agent", "observer"] });
const calm = apiKey("calm", { tenant: "acme", roles: ["agent", "observer"] });

let wayfind: RouterTestServer;
beforeAll(async () => {
  wayfind = await startRouterServer({
    auth: {
      allow_unauthenticated: false,
      api_keys: [busy.entry, calm.entry],
      limits: { calls_per_second: 1, burst: 3, watch_streams: 1 },
    },
  });
});
afterAll(() => wayfind.stop());

const tools = (secret: string) => wayfind.grpc(ToolDiscoveryService, { token: secret });

describe("calls per second", () => {
  it("admits a burst, then answers RESOURCE_EXHAUSTED with a RetryInfo; other principals are unaffected", async () => {
    for (let i = 0; i < 3; i++) await tools(busy.secret).listTools({});
    const error = await failure(tools(busy.secret).listTools({}));
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toMatch(
      /key:acme\/busy is over its limit of 1 calls per second; retry in \d+ ms/,
    );
    const [retry] = error.findDetails(RetryInfoSchema);
    const delayMs = Number(retry?.retryDelay?.seconds ?? 0n) * 1000 + (retry?.retryDelay?.nanos ?? 0) / 1e6;
    expect(delayMs).toBeGreaterThan(0);
    expect(delayMs).toBeLessThanOrEqual(1000);

    await expect(tools(calm.secret).listTools({})).resolves.toBeDefined();
  });
});

describe("open watch streams", () => {
  it("refuses a second open stream, and admits one again when the first ends", async () => {
    const first = new AbortController();
    const stream = tools(calm.secret).watchToolEvents({}, { signal: first.signal });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next(); // the status: the stream is open

    const second = new AbortController();
    const error = await failure(
      (async () => {
        for await (const _ of tools(calm.secret).watchToolEvents({}, { signal: second.signal })) break;
      })(),
    );
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toContain("already has 1 open watch streams");

    first.abort();
    await iterator.return?.();
    await expect
      .poll(async () => {
        try {
          for await (const _ of tools(calm.secret).watchToolEvents({})) break;
          return "open";
        } catch {
          return "refused";
        }
      })
      .toBe("open");
  });
});
