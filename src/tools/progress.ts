/**
 * Progress of a tool call in flight, passed from the MCP server that runs it back to whoever asked
 * (an MCP client of wayfind's endpoint). The endpoint calls wayfind through the in-process transport,
 * whose unary RPCs carry no stream: it opens a sink here and names it in a request header, and the
 * in-process transport hands that sink to the CallTool handler. Calls from the port never carry one.
 */
import { randomUUID } from "node:crypto";

/** One progress notification, as MCP's `notifications/progress` carries it (less the token). */
export interface ToolProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

export type ProgressSink = (progress: ToolProgress) => void;

/** The request header that names an open sink (in-process calls only). */
export const PROGRESS_SINK_HEADER = "wayfind-progress-sink";

/** The sinks of in-process calls in flight, each under a random name. */
export class ProgressSinks {
  private readonly open = new Map<string, ProgressSink>();

  /** Opens `sink` for one call: its name for the header, and `close` once the call has ended. */
  openSink(sink: ProgressSink): { readonly name: string; close(): void } {
    const name = randomUUID();
    this.open.set(name, sink);
    return { name, close: () => this.open.delete(name) };
  }

  /** The sink a request's header names, if it is open. */
  sinkNamed(name: string | null): ProgressSink | undefined {
    return name === null ? undefined : this.open.get(name);
  }
}
