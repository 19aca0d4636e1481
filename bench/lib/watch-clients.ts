/**
 * The client side of bench/watch-fanout.ts, in its own process so its work is not counted in the
 * server's event loop. Usage: node --import tsx bench/lib/watch-clients.ts PORT STREAMS EVENTS
 * Opens STREAMS WatchToolEvents streams over native gRPC (100 per connection) as tenant `acme`, prints
 * "ready" once every stream has its status message, then "done" once each has received EVENTS events.
 */
import { setMaxListeners } from "node:events";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";

const [port, streams, events] = process.argv.slice(2).map(Number) as [number, number, number];
const STREAMS_PER_CONNECTION = 100;

const clients = Array.from({ length: Math.ceil(streams / STREAMS_PER_CONNECTION) }, () =>
  createClient(ToolDiscoveryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` })),
);
let ready = 0;
let done = 0;
const abort = new AbortController();
setMaxListeners(streams + 10, abort.signal);
for (let i = 0; i < streams; i++) {
  const client = clients[Math.floor(i / STREAMS_PER_CONNECTION)] as (typeof clients)[number];
  void (async () => {
    let received = 0;
    const stream = client.watchToolEvents(
      { caller: { tenantId: "acme" }, filter: { types: ["tool_search_query"] } },
      { signal: abort.signal },
    );
    try {
      for await (const response of stream) {
        if (response.message.case === "status" && ++ready === streams) console.log("ready");
        if (response.message.case === "event" && ++received === events && ++done === streams) {
          console.log("done");
          abort.abort();
        }
      }
    } catch (error) {
      if (!abort.signal.aborted) console.error(`stream ${i}: ${String(error)}`);
    }
  })();
}
