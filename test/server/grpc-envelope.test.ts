import * as http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RegisterToolsRequestSchema, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

const REGISTER = "/wayfind.v1.ToolDiscoveryService/RegisterTools";

/** An uncompressed RegisterTools request for one tool of this name. */
function registerBytes(name: string): Uint8Array {
  const request = create(RegisterToolsRequestSchema, {
    source: "probe",
    tools: [{ name, description: "A probe.", argsSchema: { type: "object" } }],
  });
  return toBinary(RegisterToolsRequestSchema, request);
}

function envelope(flag: number, body: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(flag, 0);
  prefix.writeUInt32BE(body.byteLength, 1);
  return Buffer.concat([prefix, body]);
}

/** Sends `chunks` as a native gRPC request, one write each, and reads the status from raw HTTP/2. */
function call(
  chunks: Buffer[],
  headers: Record<string, string> = {},
): Promise<{ code: Code; message: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(wayfind.baseUrl);
    const stream = session.request({
      ":method": "POST",
      ":path": REGISTER,
      "content-type": "application/grpc",
      te: "trailers",
      "wayfind-role": "admin",
      ...headers,
    });
    let status: http2.IncomingHttpHeaders = {};
    stream.on("response", (head) => {
      status = head;
    });
    stream.on("trailers", (trailers) => {
      status = trailers;
    });
    stream.on("close", () => {
      session.close();
      resolve({
        code: Number(status["grpc-status"]),
        message: decodeURIComponent(String(status["grpc-message"] ?? "")),
      });
    });
    stream.on("error", reject);
    stream.resume();
    for (const chunk of chunks) stream.write(chunk);
    stream.end();
  });
}

async function registered(name: string): Promise<boolean> {
  const tools = await wayfind
    .grpc(ToolDiscoveryService)
    .getTools({ names: [name] })
    .catch(() => undefined);
  return (tools?.tools.length ?? 0) > 0;
}

describe("a native gRPC message's compressed flag", () => {
  it("set without grpc-encoding fails the call with INTERNAL, and the message is never handled", async () => {
    const status = await call([envelope(1, registerBytes("probe.flagged"))]);
    expect(status.code).toBe(Code.Internal);
    expect(status.message).toContain("compressed flag set but the request has no grpc-encoding header");
    expect(await registered("probe.flagged")).toBe(false);
  });

  it("is read in any chunking: a prefix split byte by byte is still seen", async () => {
    const bytes = envelope(1, registerBytes("probe.split"));
    const chunks = [...bytes.subarray(0, 5)].map((byte) => Buffer.from([byte]));
    const status = await call([...chunks, bytes.subarray(5)], { "grpc-encoding": "identity" });
    expect(status.code).toBe(Code.Internal);
    expect(await registered("probe.split")).toBe(false);
  });

  it("clear, the message is handled as always", async () => {
    const status = await call([envelope(0, registerBytes("probe.plain"))]);
    expect(status.code).toBe(0);
    expect(await registered("probe.plain")).toBe(true);
  });

  it("set with grpc-encoding gzip, the message is inflated and handled", async () => {
    const status = await call([envelope(1, gzipSync(registerBytes("probe.gzip")))], {
      "grpc-encoding": "gzip",
    });
    expect(status.code).toBe(0);
    expect(await registered("probe.gzip")).toBe(true);
  });
});
