import { type Attributes, type Span, SpanStatusCode, trace } from "@opentelemetry/api";

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
