import type { DescMethod, DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createServiceImplSpec,
  type HandlerContext,
  type MethodImplSpec,
  type ServiceImpl,
} from "@connectrpc/connect";

/**
 * One RPC implementation with its method, transport-neutral: connect-es's own discriminated union
 * (`kind` narrows `method` and `impl` together), so every layer between a service's typed
 * `ServiceImpl` and the transports keeps the method's kind and message types. Both transports
 * (connect-node and grpc-js) serve these, so each handler is written once.
 */
export type MethodRoute = MethodImplSpec;

/**
 * The routes of every method of `service`. The implementation must be complete (not `Partial`): an
 * RPC added to the proto without a handler fails to compile.
 */
export function serviceRoutes<S extends DescService>(service: S, impl: ServiceImpl<S>): MethodRoute[] {
  return Object.values(createServiceImplSpec<S>(service, impl).methods);
}

/** `/wayfind.v1.ToolDiscoveryService/SearchTools` */
export function methodPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/**
 * What a wrapper does around one call: `begin` runs first, then `prepare` (which may refuse the call),
 * then the implementation; then exactly one of `succeeded` and `failed`.
 */
export interface CallObserver {
  begin(
    input: unknown,
    context: HandlerContext,
  ): {
    /** The call succeeded (for a stream: its last message went out). */
    succeeded(): void;
    /** The call failed with `error`; returns what to throw instead. */
    failed(error: unknown): unknown;
    /** Work before the implementation that may fail the call (authentication); async only when it must be. */
    prepare?(): void | Promise<void>;
    /**
     * After the implementation returned (a stream: ended), before `succeeded`: throws when the call
     * must fail after all (a stream ended because its credential was revoked).
     */
    settle?(): void;
    /** Before each message a stream sends: throws when the call must end instead (see `settle`). */
    beforeMessage?(): void;
    /** Runs the implementation (e.g. inside a trace context); absent = runs it as it is. */
    run?<T>(implementation: () => T): T;
  };
}

/**
 * The route with its implementation wrapped by `observer`, kind and types kept. A stream's
 * implementation is started on its first read, as connect and grpc-js start it.
 */
export function observeRoute(route: MethodRoute, observer: CallObserver): MethodRoute {
  const { begin } = observer;
  switch (route.kind) {
    case "unary": {
      const { method, impl } = route;
      return {
        kind: "unary",
        method,
        impl: (input, ctx) => observed(begin(input, ctx), () => impl(input, ctx)),
      };
    }
    case "client_streaming": {
      const { method, impl } = route;
      return {
        kind: "client_streaming",
        method,
        impl: (input, ctx) => observed(begin(input, ctx), () => impl(input, ctx)),
      };
    }
    case "server_streaming": {
      const { method, impl } = route;
      return {
        kind: "server_streaming",
        method,
        impl: (input, ctx) => observedStream(begin(input, ctx), () => impl(input, ctx)),
      };
    }
    case "bidi_streaming": {
      const { method, impl } = route;
      return {
        kind: "bidi_streaming",
        method,
        impl: (input, ctx) => observedStream(begin(input, ctx), () => impl(input, ctx)),
      };
    }
  }
}

type Observation = ReturnType<CallObserver["begin"]>;

async function observed<T>(observation: Observation, run: () => Promise<T> | T): Promise<T> {
  try {
    const prepared = observation.prepare?.();
    if (prepared) await prepared;
    const output = await (observation.run ? observation.run(run) : run());
    observation.settle?.();
    observation.succeeded();
    return output;
  } catch (error) {
    throw observation.failed(error);
  }
}

async function* observedStream<T>(observation: Observation, run: () => AsyncIterable<T>): AsyncIterable<T> {
  let ended = false;
  try {
    const prepared = observation.prepare?.();
    if (prepared) await prepared;
    for await (const message of observation.run ? observation.run(run) : run()) {
      observation.beforeMessage?.();
      yield message;
    }
    observation.settle?.();
    ended = true;
    observation.succeeded();
  } catch (error) {
    ended = true;
    throw observation.failed(error);
  } finally {
    // The reader stopped before the end (the client went away): the call still ends, as cancelled,
    // so what it holds (its stream slot, its credential watch) is released.
    if (!ended) observation.failed(new ConnectError("the client stopped reading the stream", Code.Canceled));
  }
}
