import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RegisterToolsRequestSchema, ToolDiscoveryService } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { envelope, rawGrpcStatus } from "../../support/rpc.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

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

/** Sends `chunks` as a RegisterTools call of the operator, one write each. */
function call(chunks: Buffer[], headers: Record<string, string> = {}) {
  return rawGrpcStatus(wayfind.baseUrl, REGISTER, chunks, { "wayfind-role": "admin", ...headers });
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
