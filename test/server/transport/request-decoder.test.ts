import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { RegisterToolsRequestSchema } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { OFF_LOOP_DECODE_BYTES, RequestDecoder } from "../../../src/server/transport/request-decoder.ts";

/** A RegisterTools body well over the off-loop threshold: wide schemas and examples, as in bench/register-stall.ts. */
function largeRequest(): Uint8Array {
  const properties = Object.fromEntries(
    Array.from({ length: 300 }, (_, p) => [`p${p}`, { type: "string", description: `field ${p}` }]),
  );
  const request = create(RegisterToolsRequestSchema, {
    source: "big",
    tools: Array.from({ length: 5 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool ${i}`,
      argsSchema: { type: "object", properties },
      examples: [{ args: { p0: "x".repeat(100), count: 3, nested: { ok: true } }, description: "one" }],
    })),
  });
  const bytes = toBinary(RegisterToolsRequestSchema, request);
  expect(bytes.length).toBeGreaterThan(OFF_LOOP_DECODE_BYTES);
  return bytes;
}

let decoder: RequestDecoder;
afterEach(() => decoder.close());

describe("RequestDecoder", () => {
  it("decodes a large body in its worker to the same message as an inline decode", async () => {
    decoder = new RequestDecoder();
    const bytes = largeRequest();
    const pending = decoder.decode(RegisterToolsRequestSchema, bytes);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual(fromBinary(RegisterToolsRequestSchema, bytes));
  });

  it("decodes a small body inline, without a round trip", () => {
    decoder = new RequestDecoder();
    const bytes = toBinary(RegisterToolsRequestSchema, create(RegisterToolsRequestSchema, { source: "s" }));
    const message = decoder.decode(RegisterToolsRequestSchema, bytes);
    expect(message).not.toBeInstanceOf(Promise);
    expect(message).toMatchObject({ source: "s" });
  });

  it("answers a large malformed body with INVALID_ARGUMENT in the inline decoder's words", async () => {
    decoder = new RequestDecoder();
    const bytes = largeRequest().slice(0, -7);
    const offLoop = await Promise.resolve(decoder.decode(RegisterToolsRequestSchema, bytes)).catch((e) => e);
    expect(offLoop).toBeInstanceOf(ConnectError);
    expect(offLoop.code).toBe(Code.InvalidArgument);
    expect(offLoop.rawMessage).toMatch(/^request is not a valid wayfind\.v1\.RegisterToolsRequest: /);
    await decoder.close();
    // A closed decoder decodes inline: the same answer.
    let inline: unknown;
    try {
      decoder.decode(RegisterToolsRequestSchema, bytes);
    } catch (error) {
      inline = error;
    }
    expect(inline).toMatchObject({ code: Code.InvalidArgument, rawMessage: offLoop.rawMessage });
  });

  it("serves many large bodies at once, each to its own caller", async () => {
    decoder = new RequestDecoder();
    const bodies = Array.from({ length: 6 }, (_, i) =>
      toBinary(
        RegisterToolsRequestSchema,
        create(RegisterToolsRequestSchema, {
          source: `s${i}`,
          tools: [{ name: "t", description: "d".repeat(OFF_LOOP_DECODE_BYTES) }],
        }),
      ),
    );
    const decoded = await Promise.all(bodies.map((b) => decoder.decode(RegisterToolsRequestSchema, b)));
    expect(decoded.map((m) => m.source)).toEqual(["s0", "s1", "s2", "s3", "s4", "s5"]);
  });
});
