import { create, type DescMessage, type DescMethod, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext, type Transport } from "@connectrpc/connect";
import { type MethodRoute, methodPath } from "./transport/rpc.ts";
import { toRpcError } from "./transport/rpc-errors.ts";

/**
 * A Connect transport that serves calls in this process through the same routes (credentials, roles,
 * limits, logs, metrics) as the port: generated clients on it are how the MCP endpoint
 * (src/mcp-endpoint) calls wayfind, so it adds a protocol, not a second set of rules. Unary only.
 *
 * Messages are handed over as they are, never encoded: a call costs the route and nothing else. The
 * caller's context values reach the handler (an MCP session's call: src/tools/mcp-session.ts), which
 * no call from the port can set.
 */
export function inProcessTransport(routes: readonly MethodRoute[]): Transport {
  const unary = new Map<string, Extract<MethodRoute, { kind: "unary" }>>();
  for (const route of routes) if (route.kind === "unary") unary.set(methodPath(route.method), route);
  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const route = unary.get(methodPath(method));
      if (route === undefined)
        throw new ConnectError(`${methodPath(method)} is not served in process`, Code.Unimplemented);
      const context = createHandlerContext({
        service: method.parent,
        method,
        protocolName: "in-process",
        requestMethod: "POST",
        url: methodPath(method),
        timeoutMs,
        requestSignal: signal,
        requestHeader: header,
        contextValues,
      });
      try {
        const output = await route.impl(messageOf(method.input, input), context);
        return {
          stream: false,
          service: method.parent,
          method,
          header: context.responseHeader,
          message: messageOf(method.output, output),
          trailer: context.responseTrailer,
        };
      } catch (error) {
        // What the port would answer: the code and the message that says what to fix.
        throw toRpcError(error);
      } finally {
        context.abort();
      }
    },
    stream(method: DescMethod) {
      return Promise.reject(
        new ConnectError(
          `${methodPath(method)} streams; only unary calls are served in process`,
          Code.Unimplemented,
        ),
      );
    },
  } as Transport;
}

/** A message of `schema`: given one, as it is; given its init shape, created from it. */
function messageOf<D extends DescMessage>(schema: D, value: unknown) {
  // biome-ignore lint/suspicious/noExplicitAny: init shapes and messages of the route's own schema.
  return isMessage(value, schema) ? value : create(schema, value as any);
}
