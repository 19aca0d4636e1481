import { once } from "node:events";
import * as http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../../gen/ts/grpc/health/v1/health_pb.ts";
import { Provider } from "../../../gen/ts/wayfind/v1/common_pb.ts";
import { UsageService } from "../../../gen/ts/wayfind/v1/usage_pb.ts";
import { fitMaxConnections } from "../../../src/server/transport/connections.ts";
import { openRaw, type RawConnection } from "../../support/raw-http.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

/** Short limits so each case takes well under a second or two; the defaults are tested in config. */
const HANDSHAKE_S = 0.3;
const HEADER_S = 0.3;
const BODY_S = 0.6;
const IDLE_S = 0.5;

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    server: {
      max_message_bytes: 1024,
      handshake_timeout_seconds: HANDSHAKE_S,
      request_header_timeout_seconds: HEADER_S,
      request_body_timeout_seconds: BODY_S,
      idle_timeout_seconds: IDLE_S,
    },
  });
});
afterAll(() => wayfind.stop());

/** A complete HTTP/1.1 Connect JSON health check that keeps the connection alive. */
const HEALTH_CHECK_H1 =
  "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
  "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

/** Waits until `received()` contains `text` `times` times (or fails after `withinMs`). */
async function waitFor(connection: RawConnection, text: string, times = 1, withinMs = 3_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (connection.received().split(text).length - 1 < times) {
    if (Date.now() > deadline) throw new Error(`never received ${JSON.stringify(text)} ${times} times`);
    await sleep(10);
  }
}

describe("HTTP/1.1 after a rejected body", () => {
  it("answers an over-limit chunked body with Connection: close and closes the socket, so a request sent behind it cannot stall", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(
      "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    const chunk = "a".repeat(16 * 1024);
    for (let i = 0; i < 4; i++) connection.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    connection.socket.write("0\r\n\r\n");
    connection.socket.write(HEALTH_CHECK_H1);

    const closedAfterMs = await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 429 /);
    expect(connection.received()).toMatch(/\r\nConnection: close\r\n/i);
    // Before the fix the second request hung until the keep-alive timeout (31 s).
    expect(closedAfterMs).toBeLessThan(2_000);
  });
});

describe("HTTP/1.1 keep-alive", () => {
  it("answers two complete requests on one connection and keeps it open", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(HEALTH_CHECK_H1 + HEALTH_CHECK_H1);
    await waitFor(connection, "SERVING", 2);
    expect(connection.received().match(/HTTP\/1\.1 200 /g)).toHaveLength(2);
    expect(connection.received()).not.toMatch(/^Connection: close/im);
    expect(connection.socket.destroyed).toBe(false);
    connection.socket.destroy();
  });
});

describe("handshake timeout", () => {
  it("closes a TCP connection that sends nothing", async () => {
    const connection = await openRaw(wayfind.port);
    const closedAfterMs = await connection.closed;
    expect(closedAfterMs).toBeGreaterThanOrEqual(HANDSHAKE_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(HANDSHAKE_S * 1000 + 1_500);
    expect(connection.received()).toBe("");
  });

  it("closes an HTTP/2 connection that sends the preface but never its SETTINGS", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const closedAfterMs = await connection.closed;
    expect(closedAfterMs).toBeGreaterThanOrEqual(HANDSHAKE_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(HANDSHAKE_S * 1000 + 1_500);
  });
});

describe("request header timeout", () => {
  it("answers HTTP/1.1 request headers that never complete with 408 and closes the connection", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write("POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const closedAfterMs = await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADER_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(HEADER_S * 1000 + 1_500);
  });

  it.each([
    ["native gRPC", "application/grpc"],
    ["Connect", "application/proto"],
  ])("resets an HTTP/2 %s stream that sends headers but never a body", async (_protocol, contentType) => {
    const session = http2.connect(wayfind.baseUrl);
    const openedAt = Date.now();
    const stream = session.request(
      { ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": contentType },
      { endStream: false },
    );
    stream.on("error", () => {});
    stream.resume();
    await once(stream, "close");
    const closedAfterMs = Date.now() - openedAt;
    session.close();
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADER_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(HEADER_S * 1000 + 1_500);
  });
});

describe("request body timeout", () => {
  /** gRPC framing: uncompressed flag and length, then the first `sent` of `declared` message bytes. */
  const partialGrpcMessage = (declared: number, sent: number) =>
    Buffer.concat([Buffer.from([0, 0, 0, 0, declared]), Buffer.alloc(sent)]);

  it("answers an HTTP/1.1 Connect call whose body stops halfway with deadline_exceeded and closes the connection", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(
      "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
        'Content-Type: application/json\r\nContent-Length: 20\r\n\r\n{"service"',
    );
    const closedAfterMs = await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 504 /);
    expect(connection.received()).toMatch(/\r\nConnection: close\r\n/i);
    expect(connection.received()).toContain('"code":"deadline_exceeded"');
    expect(connection.received()).toContain("server.request_body_timeout_seconds");
    expect(closedAfterMs).toBeGreaterThanOrEqual(BODY_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(BODY_S * 1000 + 1_500);
  });

  it("answers a POST /mcp whose body stops halfway with 408 and closes the connection (issue 42: /mcp held it open)", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n" +
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":',
    );
    const closedAfterMs = await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(connection.received()).toContain("server.request_body_timeout_seconds");
    expect(closedAfterMs).toBeGreaterThanOrEqual(BODY_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(BODY_S * 1000 + 1_500);
  });

  it("answers an HTTP/1.1 gRPC-Web call whose message stops halfway with DEADLINE_EXCEEDED and closes the connection", async () => {
    const connection = await openRaw(wayfind.port);
    const head =
      "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
      "Content-Type: application/grpc-web+proto\r\nContent-Length: 105\r\n\r\n";
    connection.socket.write(Buffer.concat([Buffer.from(head), partialGrpcMessage(100, 10)]));
    const closedAfterMs = await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(connection.received()).toMatch(/grpc-status: ?4\r\n/i); // DEADLINE_EXCEEDED
    expect(closedAfterMs).toBeGreaterThanOrEqual(BODY_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(BODY_S * 1000 + 1_500);
  });

  it("answers an HTTP/2 Connect call whose body stops halfway with deadline_exceeded and closes the stream", async () => {
    const session = http2.connect(wayfind.baseUrl);
    const openedAt = Date.now();
    const stream = session.request(
      { ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/json" },
      { endStream: false },
    );
    stream.on("error", () => {});
    stream.write('{"service"');
    const [headers] = (await once(stream, "response")) as [http2.IncomingHttpHeaders];
    let body = "";
    stream.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    await once(stream, "close");
    const closedAfterMs = Date.now() - openedAt;
    session.close();
    expect(headers[":status"]).toBe(504);
    expect(body).toContain('"code":"deadline_exceeded"');
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(closedAfterMs).toBeGreaterThanOrEqual(BODY_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(BODY_S * 1000 + 1_500);
  });

  it("answers a native gRPC call whose message stops halfway with DEADLINE_EXCEEDED and closes the stream", async () => {
    const session = http2.connect(wayfind.baseUrl);
    const openedAt = Date.now();
    const stream = session.request(
      {
        ":method": "POST",
        ":path": "/grpc.health.v1.Health/Check",
        "content-type": "application/grpc",
        te: "trailers",
      },
      { endStream: false },
    );
    stream.on("error", () => {});
    stream.write(partialGrpcMessage(100, 10));
    const [headers] = (await once(stream, "response")) as [http2.IncomingHttpHeaders];
    stream.resume();
    await once(stream, "close");
    const closedAfterMs = Date.now() - openedAt;
    session.close();
    expect(headers["grpc-status"]).toBe("4"); // DEADLINE_EXCEEDED
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(decodeURIComponent(String(headers["grpc-message"]))).toContain(
      "server.request_body_timeout_seconds",
    );
    expect(closedAfterMs).toBeGreaterThanOrEqual(BODY_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(BODY_S * 1000 + 1_500);
  });

  it("leaves a bidi-streaming call (reflection) that keeps its request side open past the timeout alone", async () => {
    const session = http2.connect(wayfind.baseUrl);
    const stream = session.request(
      {
        ":method": "POST",
        ":path": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "content-type": "application/grpc",
        te: "trailers",
      },
      { endStream: false },
    );
    stream.on("error", () => {});
    stream.write(partialGrpcMessage(0, 0)); // one empty request message, and the stream kept open
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("trailers", resolve));
    stream.resume();
    await sleep(BODY_S * 1000 * 2);
    const openAfterTimeout = !stream.closed;
    stream.end();
    const status = (await trailers)["grpc-status"];
    session.close();
    expect(openAfterTimeout).toBe(true);
    expect(status).toBe("0");
  });
});

describe("idle timeout", () => {
  it("closes an HTTP/2 session without streams with GOAWAY", async () => {
    const session = http2.connect(wayfind.baseUrl);
    const openedAt = Date.now();
    const goaway = once(session, "goaway");
    await once(session, "close");
    const closedAfterMs = Date.now() - openedAt;
    const [errorCode] = (await goaway) as [number];
    expect(errorCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(closedAfterMs).toBeGreaterThanOrEqual(IDLE_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(IDLE_S * 1000 + 1_500);
  });

  it("closes an idle HTTP/1.1 keep-alive connection after its last response", async () => {
    const connection = await openRaw(wayfind.port);
    connection.socket.write(HEALTH_CHECK_H1);
    await waitFor(connection, "SERVING");
    const closedAfterMs = await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 200 /);
    // node adds 1 s to the advertised keep-alive timeout against races with the client.
    expect(closedAfterMs).toBeGreaterThanOrEqual(IDLE_S * 1000 * 0.8);
    expect(closedAfterMs).toBeLessThan(IDLE_S * 1000 + 2_500);
  });

  it("keeps a session open while a quiet watch stream outlives the idle timeout, and the stream still delivers", async () => {
    const client = createClient(UsageService, createGrpcTransport({ baseUrl: wayfind.baseUrl }));
    const caller = { tenantId: "idle-watch" };
    const abort = new AbortController();
    const messages = client.watchUsageEvents({ caller }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await messages.next()).value?.message.case).toBe("status");

    await sleep(IDLE_S * 1000 * 3);
    await client.recordUsage({
      caller,
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 1n, outputTokens: 1n },
      idempotencyKey: "after-idle",
    });
    const next = await messages.next();
    abort.abort();
    expect(next.value?.message.case).toBe("event");
  });

  it("answers a client that calls again after its idle connection was closed", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: wayfind.baseUrl }));
    expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    await sleep(IDLE_S * 1000 * 3);
    expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });
});

describe("handshake timeout, counted once", () => {
  const HANDSHAKE_LONG_S = 1;
  let slow: TestServer;
  beforeAll(async () => {
    slow = await startTestServer({ server: { handshake_timeout_seconds: HANDSHAKE_LONG_S } });
  });
  afterAll(() => slow.stop());

  it("closes an HTTP/2 connection whose first bytes came late and whose SETTINGS never came one handshake timeout after it opened, not two", async () => {
    const connection = await openRaw(slow.port);
    await sleep(HANDSHAKE_LONG_S * 1000 * 0.7);
    connection.socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const closedAfterMs = await connection.closed;
    expect(closedAfterMs).toBeGreaterThanOrEqual(HANDSHAKE_LONG_S * 1000 * 0.8);
    // Timed from the first bytes again, it would close only after 1.7 handshake timeouts.
    expect(closedAfterMs).toBeLessThan(HANDSHAKE_LONG_S * 1000 * 1.5);
  });
});

describe("a client that leaves", () => {
  // The server must notice a FIN at once, whatever the connection said: a departed client's
  // descriptor held until a timeout is how a burst of connections used to lock the server out.
  const PREFACE_AND_SETTINGS = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0", "latin1");
  let patient: TestServer;
  beforeAll(async () => {
    patient = await startTestServer({ server: { handshake_timeout_seconds: 30, idle_timeout_seconds: 30 } });
  });
  afterAll(() => patient.stop());

  it("closes a connection whose client ended it before saying anything", async () => {
    const connection = await openRaw(patient.port);
    connection.socket.end();
    expect(await connection.closed).toBeLessThan(2_000);
  });

  it("closes an HTTP/2 session whose client ended its side", async () => {
    const connection = await openRaw(patient.port);
    connection.socket.end(PREFACE_AND_SETTINGS);
    expect(await connection.closed).toBeLessThan(2_000);
  });
});

describe("connection cap", () => {
  const MAX_CONNECTIONS = 2;
  const warnings: { msg: string; shed: number; refused: number; open: number }[] = [];
  let capped: TestServer;
  beforeAll(async () => {
    const logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    capped = await startTestServer(
      { server: { max_connections: MAX_CONNECTIONS, handshake_timeout_seconds: 5 } },
      { logger },
    );
  });
  afterAll(() => capped.stop());

  /** An HTTP/1.1 connection answered once and kept alive: open, with no call in flight. */
  async function idleKeepAlive(): Promise<RawConnection> {
    const connection = await openRaw(capped.port);
    connection.socket.write(HEALTH_CHECK_H1);
    await waitFor(connection, "SERVING");
    return connection;
  }

  /** An HTTP/1.1 call whose body has not all arrived: a call in flight (for the 30 s body timeout). */
  async function busy(): Promise<RawConnection> {
    const connection = await openRaw(capped.port);
    connection.socket.write(
      "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{",
    );
    await sleep(100);
    return connection;
  }

  /** Closes from the client side and gives the server a moment to count the connection as gone. */
  async function release(connections: readonly RawConnection[]): Promise<void> {
    for (const connection of connections) connection.socket.destroy();
    await Promise.all(connections.map((connection) => connection.closed));
    await sleep(50);
  }

  it("admits a new connection at the cap by closing the one idle longest, and says so once in the log", async () => {
    warnings.length = 0;
    const [oldest, newer] = [await idleKeepAlive(), await idleKeepAlive()];
    const extra = [await idleKeepAlive(), await idleKeepAlive()];

    await oldest?.closed;
    await newer?.closed;
    const shedding = warnings.filter((line) => line.msg.startsWith("at server.max_connections"));
    expect(shedding).toHaveLength(1);
    expect(shedding[0]).toMatchObject({ shed: 1, refused: 0, open: MAX_CONNECTIONS });
    await release(extra);
  });

  it("closes a connection that never spoke before one that has been answered", async () => {
    const answered = await idleKeepAlive();
    const silent = await openRaw(capped.port);
    await sleep(50);
    const extra = await idleKeepAlive();

    await silent.closed;
    answered.socket.write(HEALTH_CHECK_H1);
    await waitFor(answered, "SERVING", 2);
    await release([answered, extra]);
  });

  it("refuses a connection when every open one has a call in flight, and counts both in /metrics", async () => {
    warnings.length = 0;
    const held = [await busy(), await busy()];
    const refused = await openRaw(capped.port);
    refused.socket.write(HEALTH_CHECK_H1);
    await refused.closed;
    expect(refused.received()).toBe("");
    await release(held);

    const metrics = await (await fetch(`${capped.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^wayfind_connections_refused_total 1$/m);
    expect(metrics).toMatch(/^wayfind_connections_shed_total [1-9]\d*$/m);
    expect(metrics).toMatch(/^wayfind_connections_open [1-9]$/m);
  });
});

describe("fitMaxConnections", () => {
  it("lowers the cap below the open-files limit, so connections are refused (and logged) before accept() runs out of descriptors", () => {
    expect(fitMaxConnections(4096, 256)).toBe(192);
  });

  it("keeps a cap that fits, and the configured one when the limit cannot be read", () => {
    expect(fitMaxConnections(4096, 1_048_576)).toBe(4096);
    expect(fitMaxConnections(4096, undefined)).toBe(4096);
  });
});
