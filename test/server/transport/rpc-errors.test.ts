import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../../gen/ts/google/rpc/error_details_pb.ts";
import {
  RegisterToolsRequestSchema,
  RegisterToolsResponseSchema,
} from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { invalidArgument } from "../../../src/errors.ts";
import { OFF_LOOP_DECODE_BYTES } from "../../../src/server/transport/request-decoder.ts";
import {
  grpcStatusDetails,
  MAX_ERROR_DETAILS_BYTES,
  MAX_ERROR_MESSAGE_BYTES,
  toRpcError,
} from "../../../src/server/transport/rpc-errors.ts";
import { envelope, rawGrpcStatus } from "../../support/rpc.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

const SUMMARY = "/wayfind.v1.UsageService/GetUsageSummary";
/** Field 1 (`caller`, a message) whose length runs past the end of the bytes. */
const TRUNCATED = Uint8Array.from([0x0a, 0xff, 0xff]);
/** 150 nested groups of an unknown field: deeper than protobuf-es decodes (100). */
const TOO_DEEP = Uint8Array.from([...Array(150).fill(0x7b), ...Array(150).fill(0x7c)]);

interface Status {
  readonly code: Code;
  readonly message: string;
}

/** A gRPC status the way each protocol carries it, read from raw HTTP so nothing is lost. */
const protocols: Record<
  string,
  (path: string, body: Uint8Array, headers?: Record<string, string>) => Promise<Status>
> = {
  "native gRPC": (path, body, headers = {}) =>
    rawGrpcStatus(wayfind.baseUrl, path, [envelope(0, body)], headers),
  "Connect binary": async (path, body, headers = {}) => {
    const response = await fetch(wayfind.baseUrl + path, {
      method: "POST",
      headers: { "content-type": "application/proto", ...headers },
      body,
    });
    return connectStatus(await response.json());
  },
  "gRPC-Web": async (path, body, headers = {}) => {
    const response = await fetch(wayfind.baseUrl + path, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", ...headers },
      body: envelope(0, body),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const trailer = bytes.subarray(5).toString("utf8");
    const field = (name: string) => new RegExp(`^${name}: ?(.*)$`, "m").exec(trailer)?.[1]?.trim() ?? "";
    return { code: Number(field("grpc-status")), message: decodeURIComponent(field("grpc-message")) };
  },
  "Connect GET": async (path, body) => {
    const message = Buffer.from(body).toString("base64url");
    const response = await fetch(
      `${wayfind.baseUrl}${path}?connect=v1&encoding=proto&base64=1&message=${message}`,
    );
    return connectStatus(await response.json());
  },
};

/** A Connect error body (`{"code": "invalid_argument", "message": …}`) as a status. */
function connectStatus(json: unknown): Status {
  const { code, message } = json as { code: string; message: string };
  return { code: codeFromString(code) ?? Code.Unknown, message };
}

/** What no error message may carry: JS class names, stack frames. */
const INTERNALS = /\b(Range|Type|Reference|Syntax)?Error:|\n\s+at /;

describe.each(Object.keys(protocols))("a malformed protobuf request over %s", (protocol) => {
  const call = protocols[protocol] as (typeof protocols)[string];

  it("is INVALID_ARGUMENT naming the message type and what is wrong", async () => {
    const status = await call(SUMMARY, TRUNCATED);
    expect(status).toEqual({
      code: Code.InvalidArgument,
      message: "request is not a valid wayfind.v1.GetUsageSummaryRequest: premature EOF",
    });
  });

  it("nested too deep is INVALID_ARGUMENT without internals", async () => {
    const status = await call(SUMMARY, TOO_DEEP);
    expect(status.code).toBe(Code.InvalidArgument);
    expect(status.message).toMatch(
      /^request is not a valid wayfind\.v1\.GetUsageSummaryRequest: .*maximum recursion depth/,
    );
    expect(status.message).not.toMatch(INTERNALS);
  });
});

describe("Connect GET", () => {
  it("answers a message= that is not base64 with INVALID_ARGUMENT", async () => {
    const response = await fetch(
      `${wayfind.baseUrl}${SUMMARY}?connect=v1&encoding=proto&base64=1&message=%25%25%25`,
    );
    const status = connectStatus(await response.json());
    expect(response.status).toBe(400);
    expect(status.code).toBe(Code.InvalidArgument);
    expect(status.message).toContain("wayfind.v1.GetUsageSummaryRequest");
  });
});

describe("a malformed grpc-timeout header", () => {
  it.each(["native gRPC", "gRPC-Web"])("is INVALID_ARGUMENT over %s", async (protocol) => {
    const call = protocols[protocol] as (typeof protocols)[string];
    const status = await call(SUMMARY, new Uint8Array(), { "grpc-timeout": "zzz" });
    expect(status.code).toBe(Code.InvalidArgument);
    expect(status.message).toContain("zzz");
  });

  it.each(["native gRPC", "gRPC-Web"])(
    "echoes at most 100 characters of a long value over %s",
    async (protocol) => {
      const call = protocols[protocol] as (typeof protocols)[string];
      const status = await call(SUMMARY, new Uint8Array(), { "grpc-timeout": "9".repeat(5_000) });
      expect(status).toEqual({
        code: Code.InvalidArgument,
        message: `grpc-timeout "${"9".repeat(100)}"… (5000 characters) is not a timeout; send 1-8 digits and a unit (H, M, S, m, u, n), e.g. "500m"`,
      });
    },
  );

  it("and a malformed connect-timeout-ms over Connect are INVALID_ARGUMENT alike", async () => {
    const status = await protocols["Connect binary"]?.(SUMMARY, new Uint8Array(), {
      "connect-timeout-ms": "soon",
    });
    expect(status).toEqual({
      code: Code.InvalidArgument,
      message: 'connect-timeout-ms "soon" is not a timeout; send 1-10 digits of milliseconds',
    });
  });
});

describe("Connect JSON", () => {
  async function searchTools(body: unknown): Promise<{ httpStatus: number; status: Status }> {
    const response = await fetch(`${wayfind.baseUrl}/wayfind.v1.ToolDiscoveryService/SearchTools`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { httpStatus: response.status, status: connectStatus(await response.json()) };
  }

  it("rejects an unknown enum name with INVALID_ARGUMENT naming the field and the allowed names", async () => {
    const { httpStatus, status } = await searchTools({ query: "issues", search_type: "NOPE" });
    expect(httpStatus).toBe(400);
    expect(status.code).toBe(Code.InvalidArgument);
    expect(status.message).toContain('search_type: "NOPE" is not a value of wayfind.v1.SearchType');
    expect(status.message).toContain("SEARCH_TYPE_REGEX");
  });

  it("rejects an unknown field instead of ignoring it", async () => {
    const { status } = await searchTools({ query: "issues", serach_type: "SEARCH_TYPE_REGEX" });
    expect(status.code).toBe(Code.InvalidArgument);
    expect(status.message).toContain('"serach_type" is unknown');
  });

  it("still reads a known enum name", async () => {
    const response = await fetch(`${wayfind.baseUrl}/wayfind.v1.ToolDiscoveryService/SearchTools`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "issues", search_type: "SEARCH_TYPE_REGEX" }),
    });
    expect(await response.json()).toMatchObject({ effectiveSearchType: "SEARCH_TYPE_REGEX" });
  });
});

describe("the one error mapping", () => {
  it("bounds every message to MAX_ERROR_MESSAGE_BYTES of UTF-8", () => {
    const error = toRpcError(invalidArgument(`skill pack rejected: ${"trigger is missing ✗ ".repeat(500)}`));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(Buffer.byteLength(error.rawMessage)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(error.rawMessage).toMatch(/^skill pack rejected: trigger is missing ✗/);
    expect(error.rawMessage).toMatch(/… \(message cut; \d+ characters in all\)$/);
  });

  it("bounds the problem list, sent as details, to MAX_ERROR_DETAILS_BYTES, saying how many were left out", () => {
    const problems = Array.from({ length: 1_000 }, (_, i) => `file-${i}.skill.md: trigger is missing ✗`);
    const error = toRpcError(invalidArgument("skill pack rejected", problems));
    expect(error.rawMessage).toBe("skill pack rejected");
    const details = grpcStatusDetails(error) ?? new Uint8Array();
    expect(details.byteLength).toBeLessThanOrEqual(MAX_ERROR_DETAILS_BYTES + 256);
    const listed = error.findDetails(BadRequestSchema)[0]?.fieldViolations ?? [];
    expect(listed[0]?.description).toBe("file-0.skill.md: trigger is missing ✗");
    expect(listed.at(-1)?.description).toBe(`… and ${1_000 - (listed.length - 1)} more problems`);
  });

  it("answers an unexpected error with a fixed text: no class name, stack or SQL", () => {
    const error = toRpcError(new RangeError("SQLITE_ERROR: near SELECT * FROM tools WHERE"));
    expect(error.code).toBe(Code.Internal);
    expect(error.rawMessage).toBe("internal error; the server log has the details");
  });
});

describe("a large unary body over Connect (decoded off the event loop)", () => {
  const REGISTER = "/wayfind.v1.ToolDiscoveryService/RegisterTools";
  const SEARCH = "/wayfind.v1.ToolDiscoveryService/SearchTools";
  const manyTools = (source: string) =>
    create(RegisterToolsRequestSchema, {
      caller: { tenantId: "acme" },
      source,
      tools: Array.from({ length: 200 }, (_, i) => ({
        name: `${source.replace("-", "_")}_${i}`,
        description: `Bulk tool ${i}. ${"It does one thing well. ".repeat(20)}`,
      })),
    });
  const post = (path: string, contentType: string, body: Uint8Array | string) =>
    fetch(wayfind.baseUrl + path, { method: "POST", headers: { "content-type": contentType }, body });

  it("registers a large binary request as inline", async () => {
    const body = toBinary(RegisterToolsRequestSchema, manyTools("bulk-binary"));
    expect(body.byteLength).toBeGreaterThan(OFF_LOOP_DECODE_BYTES);
    const response = await post(REGISTER, "application/proto", body);
    expect(response.status).toBe(200);
    const answer = fromBinary(RegisterToolsResponseSchema, new Uint8Array(await response.arrayBuffer()));
    expect(answer.added).toBe(200);
  });

  it("registers a large JSON request as inline", async () => {
    const body = JSON.stringify(toJson(RegisterToolsRequestSchema, manyTools("bulk-json")));
    expect(body.length).toBeGreaterThan(OFF_LOOP_DECODE_BYTES);
    const response = await post(REGISTER, "application/json", body);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { added: number }).added).toBe(200);
  });

  it("registers a large gRPC-Web request as inline, and answers a truncated one in the same words", async () => {
    const body = toBinary(RegisterToolsRequestSchema, manyTools("bulk-web"));
    const response = await fetch(wayfind.baseUrl + REGISTER, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: envelope(0, body),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    // The first envelope is the message, the second the trailer.
    const length = bytes.readUInt32BE(1);
    expect(fromBinary(RegisterToolsResponseSchema, bytes.subarray(5, 5 + length)).added).toBe(200);
    expect(bytes.subarray(10 + length).toString("utf8")).toMatch(/grpc-status: ?0/);

    const cut = body.subarray(0, body.byteLength - 7);
    const status = await protocols["gRPC-Web"]?.(REGISTER, cut);
    expect(status).toEqual({
      code: Code.InvalidArgument,
      message: "request is not a valid wayfind.v1.RegisterToolsRequest: premature EOF",
    });
  });

  it("answers a truncated large binary body in the words of a small one", async () => {
    const body = toBinary(RegisterToolsRequestSchema, manyTools("bulk-cut"));
    const response = await post(REGISTER, "application/proto", body.subarray(0, body.byteLength - 7));
    expect(connectStatus(await response.json())).toEqual({
      code: Code.InvalidArgument,
      message: "request is not a valid wayfind.v1.RegisterToolsRequest: premature EOF",
    });
  });

  it("names an unknown enum name and an unknown field of a large JSON body, as for a small one", async () => {
    const padding = "x".repeat(OFF_LOOP_DECODE_BYTES);
    const enumStatus = connectStatus(
      await (
        await post(SEARCH, "application/json", JSON.stringify({ query: padding, search_type: "NOPE" }))
      ).json(),
    );
    expect(enumStatus.code).toBe(Code.InvalidArgument);
    expect(enumStatus.message).toContain('search_type: "NOPE" is not a value of wayfind.v1.SearchType');

    const fieldStatus = connectStatus(
      await (
        await post(SEARCH, "application/json", JSON.stringify({ query: padding, serach_type: "x" }))
      ).json(),
    );
    expect(fieldStatus.code).toBe(Code.InvalidArgument);
    expect(fieldStatus.message).toContain('"serach_type" is unknown');
    expect(fieldStatus.message).not.toMatch(INTERNALS);
  });
});
