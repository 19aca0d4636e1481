import { type Attributes, context, propagation, type Span, SpanStatusCode, trace } from "@opentelemetry/api";

/**
 * Runs `work` in a span named `name` (a child of the call's span when tracing is on: see
 * src/server/tracing.ts). With tracing off the API's no-op tracer makes this nearly free.
 */
export function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => T): T {
  return trace.getTracer("wayfind").startActiveSpan(name, { attributes }, (span) => {
    try {
      const result = work(span);
      if (result instanceof Promise)
        return result.then(
          (value) => {
            span.end();
            return value;
          },
          (error: unknown) => {
            span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
            span.end();
            throw error;
          },
        ) as T;
      span.end();
      return result;
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
      span.end();
      throw error;
    }
  });
}

/**
 * The current trace context as W3C headers (`traceparent`, `tracestate`), for a request this process
 * sends on (an MCP `tools/call` carries them in its `_meta`); empty when tracing is off.
 */
export function traceContextFields(): Record<string, string> {
  const fields: Record<string, string> = {};
  propagation.inject(context.active(), fields);
  return fields;
}
