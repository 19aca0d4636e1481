/**
 * The client side of bench/watch-fanout.ts, in its own process so its work is not counted in the
 * server's event loop. Usage: node --import tsx bench/lib/watch-clients.ts PORT STREAMS EVENTS
 * Opens STREAMS WatchToolEvents streams over native gRPC (100 per connection) as tenant `acme`, prints
 * "ready" once every stream has its status message, then "done" once each has received EVENTS events.
 *
 * A stock @grpc/grpc-js client that counts messages by their first field's tag rather than decoding
 * them: decoding 50,000 messages in one process took longer than the server took to send them, so
 * the bench measured its own client.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { WatchToolEventsRequestSchema } from "../../gen/ts/wayfind/v1/tools_pb.ts";

const [port, streams, events] = process.argv.slice(2).map(Number) as [number, number, number];
const STREAMS_PER_CONNECTION = 100;
const PATH = "/wayfind.v1.ToolDiscoveryService/WatchToolEvents";
/** The first byte of a WatchToolEventsResponse: its oneof's field 1 (status) or 2 (event), length-delimited. */
const STATUS_TAG = (1 << 3) | 2;
const EVENT_TAG = (2 << 3) | 2;

const request = Buffer.from(
  toBinary(
    WatchToolEventsRequestSchema,
    create(WatchToolEventsRequestSchema, {
      caller: { tenantId: "acme" },
      filter: { types: ["tool_search_query"] },
    }),
  ),
);
// Each its own connection (a local subchannel pool), as separate agents would be.
const clients = Array.from(
  { length: Math.ceil(streams / STREAMS_PER_CONNECTION) },
  () =>
    new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
    }),
);
let ready = 0;
let done = 0;
const calls: grpc.ClientReadableStream<Buffer>[] = [];
for (let i = 0; i < streams; i++) {
  const client = clients[Math.floor(i / STREAMS_PER_CONNECTION)] as grpc.Client;
  let received = 0;
  const call = client.makeServerStreamRequest(
    PATH,
    (bytes: Buffer) => bytes,
    (bytes: Buffer) => bytes,
    request,
  );
  calls.push(call);
  call.on("data", (message: Buffer) => {
    if (message[0] === STATUS_TAG && ++ready === streams) console.log("ready");
    if (message[0] === EVENT_TAG && ++received === events && ++done === streams) {
      console.log("done");
      for (const open of calls) open.cancel();
      for (const open of clients) open.close();
    }
  });
  call.on("error", (error: grpc.ServiceError) => {
    if (error.code !== grpc.status.CANCELLED) console.error(`stream ${i}: ${error.message}`);
  });
}
