import {
  type ConnectRouter,
  createContextKey,
  createRouterTransport,
  type Transport,
} from "@connectrpc/connect";
import { PROGRESS_SINK_HEADER, type ProgressSink, type ProgressSinks } from "../tools/progress.ts";
import type { MethodRoute } from "./rpc.ts";
import { toRpcError } from "./rpc-errors.ts";

/**
 * Where a CallTool made in this process sends the progress its MCP server reports (an MCP client of
 * the endpoint asked for it). Only this transport sets it: calls on the port have none.
 */
export const PROGRESS_SINK = createContextKey<ProgressSink | undefined>(undefined, {
  description: "the progress sink of an in-process tool call",
});

/**
 * A Connect transport that serves calls in this process, through the same routes (credentials,
 * roles, limits, logs, metrics) as the port: generated clients on it are how the MCP endpoint
 * (src/mcp-endpoint) calls wayfind, so it adds a protocol, not a second set of rules. Unary only.
 */
export function inProcessTransport(routes: readonly MethodRoute[], progress: ProgressSinks): Transport {
  return createRouterTransport((router: ConnectRouter) => {
    for (const route of routes) {
      if (route.kind !== "unary") continue;
      const { impl } = route;
      router.rpc(route.method, async (input, context) => {
        context.values.set(
          PROGRESS_SINK,
          progress.sinkNamed(context.requestHeader.get(PROGRESS_SINK_HEADER)),
        );
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
