import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";

/**
 * One RPC implementation, transport-neutral: the shape connect-es uses for every method kind.
 * Both transports (connect-node and grpc-js) serve these, so each handler is written once.
 */
export type AnyMethodImpl = (
  input: unknown,
  context: HandlerContext,
) => Promise<unknown> | unknown | AsyncIterable<unknown>;

export interface MethodRoute {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly impl: AnyMethodImpl;
}

/** `/wayfind.v1.ToolDiscoveryService/SearchTools` */
export function methodPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}
