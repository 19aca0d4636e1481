/**
 * Reference servers for bench/grpc-throughput.ts, each serving only `grpc.health.v1.Health/Check`
 * on 127.0.0.1 (cleartext HTTP/2), run in a child process of its own:
 *   node --import tsx bench/lib/grpc-bare-server.ts grpc-js       bare @grpc/grpc-js (the baseline)
 *   node --import tsx bench/lib/grpc-bare-server.ts connect-node  connectNodeAdapter over http2
 * Prints one JSON line `{"msg":"listening","port":N}` on stdout, then serves until SIGTERM/SIGINT.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.ts";

/** The same answer wayfind gives: the server ("") is SERVING, unknown names are NOT_FOUND. */
const STATUSES = new Map<string, ServingStatus>([["", ServingStatus.SERVING]]);

function startGrpcJs(): Promise<number> {
  const server = new grpc.Server();
  const definition: grpc.ServiceDefinition<grpc.UntypedServiceImplementation> = {
    Check: {
      path: `/${Health.typeName}/${Health.method.check.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (message: HealthCheckRequest) =>
        Buffer.from(toBinary(HealthCheckRequestSchema, message)),
      requestDeserialize: (bytes: Buffer) => fromBinary(HealthCheckRequestSchema, bytes),
      responseSerialize: (message: HealthCheckResponse) =>
        Buffer.from(toBinary(HealthCheckResponseSchema, message)),
      responseDeserialize: (bytes: Buffer) => fromBinary(HealthCheckResponseSchema, bytes),
    },
  };
  const check = (
    call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
    callback: grpc.sendUnaryData<HealthCheckResponse>,
  ) => {
    const status = STATUSES.get(call.request.service);
    if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: "unknown service" });
    else callback(null, create(HealthCheckResponseSchema, { status }));
  };
  server.addService(definition, { Check: check });
  return new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  );
}

async function startConnectNode(): Promise<number> {
  const handler = connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      router.rpc(Health.method.check, (request: HealthCheckRequest) => {
        const status = STATUSES.get(request.service);
        if (status === undefined) throw new ConnectError("unknown service", Code.NotFound);
        return { status };
      });
    },
  });
  const server = http2.createServer({}, handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

const kind = process.argv[2];
const port =
  kind === "grpc-js"
    ? await startGrpcJs()
    : kind === "connect-node"
      ? await startConnectNode()
      : (() => {
          throw new Error(`usage: grpc-bare-server.ts grpc-js|connect-node (got ${String(kind)})`);
        })();
process.stdout.write(`${JSON.stringify({ msg: "listening", kind, port, pid: process.pid })}\n`);
for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => process.exit(0));
