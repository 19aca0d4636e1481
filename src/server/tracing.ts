import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Sampler,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { type CallObserver, type MethodRoute, methodPath, observeRoute } from "./transport/rpc.ts";
import { codeName } from "./transport/rpc-errors.ts";

/** The tracer every module asks for spans; a no-op (no cost) until tracing is started. */
const tracer = () => trace.getTracer("wayfind");

/** Running tracing: how to end it (flushing the spans still batched). */
export interface Tracing {
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry tracing from the usual variables: on when `OTEL_TRACES_EXPORTER` is `otlp` or an
 * `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set, unless `OTEL_SDK_DISABLED=true`; spans go to OTLP over
 * HTTP (the exporter reads its endpoint and headers from the same variables), sampled by
 * `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (default: parent-based, always on). Off: undefined.
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv): Tracing | undefined {
  if (env.OTEL_SDK_DISABLED === "true") return undefined;
  const wanted =
    (env.OTEL_TRACES_EXPORTER ?? "").split(",").includes("otlp") ||
    env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
  if (!wanted) return undefined;
  return startTracing(new BatchSpanProcessor({ exporter: new OTLPTraceExporter() }), samplerFromEnv(env));
}

/** Tracing into `processor` (an exporter of your choice; tests use an in-memory one). */
export function startTracing(processor: SpanProcessor, sampler?: Sampler): Tracing {
  const provider = new TracerProvider({ spanProcessors: [processor], ...(sampler ? { sampler } : {}) });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? "1");
  const byRatio = new TraceIdRatioBasedSampler(Number.isFinite(ratio) ? ratio : 1);
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return byRatio;
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: byRatio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Headers as the W3C propagator reads them (`traceparent`, `tracestate`): gRPC metadata or HTTP. */
const HEADERS: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/**
 * The routes with a server span per call: its parent taken from the caller's `traceparent` (gRPC
 * metadata or HTTP header, every protocol), the implementation run inside it so the spans it starts
 * (search, database writes, …) are its children, and its status the call's gRPC code.
 */
export function traceRoutes(routes: readonly MethodRoute[]): MethodRoute[] {
  return routes.map((route) => observeRoute(route, spanPerCall(route)));
}

function spanPerCall(route: MethodRoute): CallObserver {
  const name = methodPath(route.method).slice(1);
  return {
    begin: (_input, call) => {
      const parent = propagation.extract(ROOT_CONTEXT, call.requestHeader, HEADERS);
      const span = tracer().startSpan(
        name,
        {
          kind: SpanKind.SERVER,
          attributes: {
            "rpc.system": call.protocolName === "grpc" ? "grpc" : "connect_rpc",
            "rpc.service": route.method.parent.typeName,
            "rpc.method": route.method.name,
          },
        },
        parent,
      );
      const active = trace.setSpan(parent, span);
      return {
        run: (implementation) => context.with(active, implementation),
        succeeded: () => span.end(),
        failed: (error) => {
          span.setAttribute("rpc.grpc.status_code", codeName(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: codeName(error) });
          span.end();
          return error;
        },
      };
    },
  };
}
