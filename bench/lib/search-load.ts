import type { Client } from "@connectrpc/connect";
import type { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";

/** SearchTools calls kept in flight by the overhead benches. */
export const IN_FLIGHT = 16;
const QUERIES = ["create a pull request", "read a file", "search the web", "send a message", "list issues"];

/**
 * Keeps IN_FLIGHT SearchTools calls in flight for `seconds` (short realistic queries, round robin)
 * and returns each call's latency in ms, in completion order.
 */
export async function searchToolsLoad(
  client: Client<typeof ToolDiscoveryService>,
  seconds: number,
  caller?: { tenantId: string },
): Promise<number[]> {
  const until = performance.now() + seconds * 1000;
  const latenciesMs: number[] = [];
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      for (let i = lane; performance.now() < until; i += IN_FLIGHT) {
        const started = performance.now();
        await client.searchTools({
          ...(caller ? { caller } : {}),
          query: QUERIES[i % QUERIES.length] ?? "file",
        });
        latenciesMs.push(performance.now() - started);
      }
    }),
  );
  return latenciesMs;
}
