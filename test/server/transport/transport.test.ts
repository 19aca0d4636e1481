import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../../gen/ts/grpc/health/v1/health_pb.ts";
import { ServerReflection } from "../../../gen/ts/grpc/reflection/v1/reflection_pb.ts";
import { ServerReflection as ServerReflectionV1Alpha } from "../../../gen/ts/grpc/reflection/v1alpha/reflection_pb.ts";
import {
  type GetUsageSummaryRequest,
  GetUsageSummaryRequestSchema,
  type GetUsageSummaryResponse,
  GetUsageSummaryResponseSchema,
  UsageService,
} from "../../../gen/ts/wayfind/v1/usage_pb.ts";
import { failure } from "../../support/rpc.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

/** A stock @grpc/grpc-js client sending raw bytes, to reach the server the way a foreign client would. */
function rawGrpcCall(path: string, body: Buffer): Promise<{ code: number; details: string }> {
  const client = new grpc.Client(`127.0.0.1:${wayfind.port}`, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      body,
      (error) => {
        client.close();
        resolve({ code: error?.code ?? 0, details: error?.details ?? "" });
      },
    );
  });
}

describe("one port serves every protocol", () => {
  it("answers health checks over native gRPC", async () => {
    const response = await wayfind.grpc(Health).check({});
    expect(response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("answers health checks over Connect JSON on HTTP/1.1", async () => {
    const response = await wayfind.connect(Health).check({ service: "wayfind.v1.ToolDiscoveryService" });
    expect(response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("answers health checks over gRPC-Web", async () => {
    const response = await wayfind.grpcWeb(Health).check({});
    expect(response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("answers plain HTTP POSTs with JSON, as curl sends them", async () => {
    const response = await fetch(`${wayfind.baseUrl}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "SERVING" });
  });
});

describe("a stock @grpc/grpc-js client", () => {
  it("calls a wayfind RPC with messages encoded by the generated TypeScript code", async () => {
    const client = new grpc.Client(`127.0.0.1:${wayfind.port}`, grpc.credentials.createInsecure());
    const response = await new Promise<GetUsageSummaryResponse>((resolve, reject) => {
      client.makeUnaryRequest(
        "/wayfind.v1.UsageService/GetUsageSummary",
        (request: GetUsageSummaryRequest) => Buffer.from(toBinary(GetUsageSummaryRequestSchema, request)),
        (bytes: Buffer) => fromBinary(GetUsageSummaryResponseSchema, bytes),
        create(GetUsageSummaryRequestSchema, { caller: { tenantId: "stock" } }),
        (error, value) => (error || !value ? reject(error) : resolve(value)),
      );
    });
    client.close();
    expect(response.totals?.calls).toBe(0n);
  });
});

describe("health", () => {
  it("reports an unknown service as NOT_FOUND", async () => {
    await expect(wayfind.grpc(Health).check({ service: "no.such.Service" })).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("lists the server, every wayfind service and its writes", async () => {
    const { statuses } = await wayfind.grpc(Health).list({});
    expect(Object.keys(statuses).sort()).toEqual([
      "",
      "wayfind.v1.KeyService",
      "wayfind.v1.SkillService",
      "wayfind.v1.ToolDiscoveryService",
      "wayfind.v1.UsageService",
      // Writes: NOT_SERVING only on a replica whose shared database is away (docs/replicas.md).
      "wayfind.writes",
    ]);
  });
});

describe("server reflection", () => {
  async function ask(request: { case: "listServices" | "fileContainingSymbol"; value: string }) {
    const requests = (async function* () {
      yield { messageRequest: request };
    })();
    for await (const response of wayfind.grpc(ServerReflection).serverReflectionInfo(requests))
      return response;
    throw new Error("no reflection response");
  }

  it("lists the wayfind services, health and reflection", async () => {
    const response = await ask({ case: "listServices", value: "" });
    const names =
      response.messageResponse.case === "listServicesResponse"
        ? response.messageResponse.value.service.map((service) => service.name)
        : [];
    expect(names).toEqual(
      expect.arrayContaining([
        "wayfind.v1.ToolDiscoveryService",
        "wayfind.v1.SkillService",
        "wayfind.v1.UsageService",
        "wayfind.v1.KeyService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ]),
    );
  });

  it("returns the file of a method with its dependencies", async () => {
    const response = await ask({
      case: "fileContainingSymbol",
      value: "wayfind.v1.ToolDiscoveryService.SearchTools",
    });
    expect(response.messageResponse.case).toBe("fileDescriptorResponse");
    const files =
      response.messageResponse.case === "fileDescriptorResponse" ? response.messageResponse.value : undefined;
    // tools.proto, then common, events, struct, timestamp.
    expect(files?.fileDescriptorProto.length).toBeGreaterThanOrEqual(5);
  });

  it("answers an unknown symbol with a NOT_FOUND error response", async () => {
    const response = await ask({ case: "fileContainingSymbol", value: "wayfind.v1.Nope" });
    expect(response.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
  });

  it("speaks v1alpha for older clients", async () => {
    const requests = (async function* () {
      yield { messageRequest: { case: "listServices" as const, value: "" } };
    })();
    for await (const response of wayfind.grpc(ServerReflectionV1Alpha).serverReflectionInfo(requests)) {
      expect(response.messageResponse.case).toBe("listServicesResponse");
      return;
    }
  });
});

describe("deadlines", () => {
  it("ends a long watch stream with DEADLINE_EXCEEDED when the client's deadline passes", async () => {
    const stream = wayfind
      .grpc(UsageService)
      .watchUsageEvents({ caller: { tenantId: "t" } }, { timeoutMs: 300 });
    const drain = async () => {
      for await (const _ of stream) {
        // the status message, then nothing until the deadline
      }
    };
    const error = await failure(drain());
    expect(error.code).toBe(Code.DeadlineExceeded);
  });
});

describe("bad input", () => {
  it("answers a malformed protobuf with INVALID_ARGUMENT", async () => {
    const result = await rawGrpcCall(
      "/wayfind.v1.UsageService/GetUsageSummary",
      Buffer.from([0x0a, 0xff, 0xff]),
    );
    expect(result.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(result.details).toContain("wayfind.v1.GetUsageSummaryRequest");
  });

  it("answers an unknown method with UNIMPLEMENTED", async () => {
    const result = await rawGrpcCall("/wayfind.v1.UsageService/NoSuchMethod", Buffer.alloc(0));
    expect(result.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("rejects a message over the size limit with RESOURCE_EXHAUSTED on gRPC", async () => {
    const huge = Buffer.alloc(5 * 1024 * 1024, 0x41);
    const result = await rawGrpcCall("/wayfind.v1.UsageService/GetUsageSummary", huge);
    expect(result.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });

  it("rejects a message over the size limit with RESOURCE_EXHAUSTED on Connect", async () => {
    const model = "m".repeat(5 * 1024 * 1024);
    const error = await wayfind
      .connect(UsageService, { binary: true })
      .getUsageSummary({ model })
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
  });
});
