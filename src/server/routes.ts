import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AnyMethodImpl, MethodRoute } from "./rpc.ts";

/**
 * Routes for every method of `service`. Methods without an implementation answer UNIMPLEMENTED
 * with a clear message — never a fake success.
 */
export function serviceRoutes<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
): MethodRoute[] {
  const methods = impl as Record<string, AnyMethodImpl | undefined>;
  return service.methods.map((method) => ({
    service,
    method,
    impl: methods[method.localName] ?? unimplemented(`${service.typeName}.${method.name}`, method.methodKind),
  }));
}

function unimplemented(name: string, kind: string): AnyMethodImpl {
  const error = () =>
    new ConnectError(`${name} is not implemented in this version of wayfind`, Code.Unimplemented);
  if (kind === "server_streaming" || kind === "bidi_streaming") {
    // biome-ignore lint/correctness/useYield: a stream that fails before its first message
    return async function* () {
      throw error();
    };
  }
  return () => {
    throw error();
  };
}
