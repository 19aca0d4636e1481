import { type ConnectRouter, createRouterTransport, type Transport } from "@connectrpc/connect";
import type { MethodRoute } from "./rpc.ts";
import { toRpcError } from "./rpc-errors.ts";

/**
 * A Connect transport that serves calls in this process, through the same routes (credentials,
 * roles, limits, logs, metrics) as the port: generated clients on it are how the MCP endpoint
 * (src/mcp-endpoint) calls wayfind, so it adds a protocol, not a second set of rules. Unary only.
 */
export function inProcessTransport(routes: readonly MethodRoute[]): Transport {
  return createRouterTransport((router: ConnectRouter) => {
    for (const route of routes) {
      if (route.kind !== "unary") continue;
      const { impl } = route;
      router.rpc(route.method, async (input, context) => {
        try {
          return await impl(input, context);
        } catch (error) {
          // What the port would answer: the code and the message that says what to fix.
          throw toRpcError(error);
        }
      });
    }
  });
}
