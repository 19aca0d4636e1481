import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey, clientWith, type Protocol } from "../support/auth.ts";
import { CLI } from "../support/cli.ts";
import { mcpHeaders, openMcpSession } from "../support/mcp-session.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Issue 42: revocation and expiry reach what is already open. A WatchToolEvents stream of a revoked
 * or expired key kept delivering, and an MCP session of a revoked key kept answering and kept its
 * GET stream; now each ends with the reason (src/auth/credential-watch.ts).
 */

const operator = apiKey("operator", { roles: ["admin"] });

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({ auth: { allow_unauthenticated: false, api_keys: [operator.entry] } });
});
afterAll(() => wayfind.stop());

const keys = () => clientWith(KeyService, wayfind.baseUrl, operator.secret);
let made = 0;

/** A new key of acme's with `roles`, expiring in `seconds` when given. */
async function newKey(roles: string[], seconds?: number): Promise<{ id: string; secret: string }> {
  const id = `watched-${++made}`;
  const { secret } = await keys().createApiKey({
    id,
    tenantId: "acme",
    roles,
    ...(seconds === undefined
      ? {}
      : { expiry: { case: "expiresInSeconds" as const, value: BigInt(seconds) } }),
  });
  return { id, secret };
}

/**
 * How an open stream's next read ends: the error it failed with, or "ended". Settled at once, so a
 * stream that ends while the test is still revoking never leaves a rejection unhandled.
 */
function outcomeOf(next: Promise<unknown>): Promise<ConnectError | "ended"> {
  return next.then(
    () => "ended" as const,
    (error: unknown) => ConnectError.from(error),
  );
}

/** `outcome`, or "still open" when it has not come after `ms`. */
async function endOf(
  outcome: Promise<ConnectError | "ended">,
  ms = 5_000,
): Promise<ConnectError | "still open" | "ended"> {
  const timeout = new Promise<"still open">((resolve) => setTimeout(() => resolve("still open"), ms).unref());
  return Promise.race([outcome, timeout]);
}

/** Opens WatchToolEvents with `secret` over `protocol`; resolves once its status arrived. */
async function openWatch(secret: string, protocol: Protocol) {
  const stream = clientWith(ToolDiscoveryService, wayfind.baseUrl, secret, protocol)
    .watchToolEvents({})
    [Symbol.asyncIterator]();
  const status = await stream.next();
  expect(status.value?.message.case).toBe("status");
  return stream;
}

describe("an open WatchToolEvents stream", () => {
  it.each(["grpc", "connect"] as const)(
    "ends with UNAUTHENTICATED and the reason when its key is revoked, over %s (it kept delivering)",
    async (protocol) => {
      const key = await newKey(["observer"]);
      const stream = await openWatch(key.secret, protocol);
      const next = outcomeOf(stream.next());
      await keys().revokeApiKey({ id: key.id, tenantId: "acme" });
      const ended = await endOf(next);
      expect(ended).toBeInstanceOf(ConnectError);
      expect((ended as ConnectError).code).toBe(Code.Unauthenticated);
      expect((ended as ConnectError).rawMessage).toBe(`API key ${key.id} has been revoked`);
    },
  );

  it.each(["grpc", "connect"] as const)(
    "delivers nothing after the revocation commits, not even an event that follows at once, over %s",
    async (protocol) => {
      const key = await newKey(["observer"]);
      const stream = await openWatch(key.secret, protocol);
      const next = outcomeOf(stream.next());
      await keys().revokeApiKey({ id: key.id, tenantId: "acme" });
      // Well within the watch's check interval: only a check before each message keeps it out.
      await clientWith(ToolDiscoveryService, wayfind.baseUrl, operator.secret).searchTools({
        caller: { tenantId: "acme" },
        query: "anything at all",
      });
      const ended = await endOf(next);
      expect(ended).toBeInstanceOf(ConnectError);
      expect((ended as ConnectError).code).toBe(Code.Unauthenticated);
    },
  );

  it("ends when its key expires, saying when", async () => {
    const key = await newKey(["observer"], 1);
    const stream = await openWatch(key.secret, "grpc");
    const ended = await endOf(outcomeOf(stream.next()));
    expect((ended as ConnectError).code).toBe(Code.Unauthenticated);
    expect((ended as ConnectError).rawMessage).toMatch(new RegExp(`^API key ${key.id} expired at `));
  });

  it("ends when `wayfind keys revoke` revokes its key from another process", async () => {
    const key = await newKey(["observer"]);
    const stream = await openWatch(key.secret, "grpc");
    const next = outcomeOf(stream.next());
    // The server's config: its data folder, or on PostgreSQL the fleet's database.
    await promisify(execFile)(process.execPath, [
      CLI,
      "keys",
      "revoke",
      key.id,
      "--config",
      wayfind.config.configFile ?? "",
    ]);
    const ended = await endOf(next);
    expect((ended as ConnectError).rawMessage).toBe(`API key ${key.id} has been revoked`);
  });

  it("goes on for a key that is still good while another is revoked", async () => {
    const kept = await newKey(["observer"]);
    const revoked = await newKey(["observer"]);
    const stream = await openWatch(kept.secret, "grpc");
    const next = outcomeOf(stream.next());
    await keys().revokeApiKey({ id: revoked.id, tenantId: "acme" });
    expect(await endOf(next, 1_000)).toBe("still open");
    await stream.return?.();
  });
});

describe("an open MCP session", () => {
  it("is closed when its key is revoked: its GET stream ends and the next request is 401 with the reason (it kept answering)", async () => {
    const key = await newKey(["agent"]);
    const session = await openMcpSession(wayfind.baseUrl, key.secret);
    const stream = await fetch(`${wayfind.baseUrl}/mcp`, { headers: mcpHeaders(key.secret, session) });
    expect(stream.status).toBe(200);
    const reader = stream.body?.getReader();
    const streamEnd = (async () => {
      for (;;) if ((await reader?.read())?.done !== false) return "ended";
    })().catch(() => "failed instead of ending");
    await keys().revokeApiKey({ id: key.id, tenantId: "acme" });
    expect(
      await Promise.race([streamEnd, new Promise((resolve) => setTimeout(resolve, 5_000, "open"))]),
    ).toBe("ended");
    const ping = await fetch(`${wayfind.baseUrl}/mcp`, {
      method: "POST",
      headers: mcpHeaders(key.secret, session),
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
    });
    expect(ping.status).toBe(401);
    expect(((await ping.json()) as { error: { message: string } }).error.message).toBe(
      `API key ${key.id} has been revoked`,
    );
  });
});
