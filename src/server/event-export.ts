import { SeverityNumber } from "@opentelemetry/api-logs";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordProcessor } from "@opentelemetry/sdk-logs";
import type { StoredEvent } from "../events/index.ts";

/**
 * The event log as OpenTelemetry log records, so events land beside traces and metrics in the tools
 * operators already run. One record per committed event: event name `wayfind.<type>` (e.g.
 * `wayfind.tool_activated`), its time, and attributes `wayfind.event.id`, `wayfind.tenant_id`,
 * `wayfind.session_id`, `wayfind.run_id` and each payload field as `wayfind.<field>`.
 */
export interface EventExport {
  /** Hands one committed event to the exporter (batched, off the call path). */
  exportEvent(event: StoredEvent): void;
  /** Flushes what is batched and stops. */
  shutdown(): Promise<void>;
}

/**
 * On when `OTEL_LOGS_EXPORTER` is `otlp` or an `OTEL_EXPORTER_OTLP_(LOGS_)ENDPOINT` is set, unless
 * `OTEL_LOGS_EXPORTER=none` or `OTEL_SDK_DISABLED=true`; OTLP over HTTP, endpoint and headers from
 * the same variables. Off: undefined.
 */
export function eventExportFromEnv(env: NodeJS.ProcessEnv): EventExport | undefined {
  if (env.OTEL_SDK_DISABLED === "true") return undefined;
  const exporters = (env.OTEL_LOGS_EXPORTER ?? "").split(",");
  if (exporters.includes("none")) return undefined;
  const wanted =
    exporters.includes("otlp") ||
    env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
    env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT !== undefined;
  return wanted
    ? startEventExport(new BatchLogRecordProcessor({ exporter: new OTLPLogExporter() }))
    : undefined;
}

/** Events into `processor` (an exporter of your choice; tests use an in-memory one). */
export function startEventExport(processor: LogRecordProcessor): EventExport {
  const provider = new LoggerProvider({ processors: [processor] });
  const logger = provider.getLogger("wayfind.events");
  return {
    exportEvent(event) {
      const attributes: Record<string, string | number | boolean> = {
        "wayfind.event.id": event.id.toString(),
        "wayfind.event.type": event.type,
      };
      if (event.tenantId) attributes["wayfind.tenant_id"] = event.tenantId;
      if (event.sessionId) attributes["wayfind.session_id"] = event.sessionId;
      if (event.runId) attributes["wayfind.run_id"] = event.runId;
      for (const [name, value] of Object.entries(event.attributes)) attributes[`wayfind.${name}`] = value;
      logger.emit({
        eventName: `wayfind.${event.type}`,
        timestamp: event.timestampMs,
        severityNumber: SeverityNumber.INFO,
        severityText: "INFO",
        body: event.type,
        attributes,
      });
    },
    shutdown: () => provider.shutdown(),
  };
}
