/**
 * The Streamable HTTP transport (MCP 2025-11-25; clients of 2025-06-18 and 2025-03-26 alike) of one
 * session of `/mcp`, written on Node's own request and response, HTTP/1.1 or HTTP/2: every request
 * with an answer due opens an event stream (SSE) that carries what relates to it — progress, the
 * servers' requests and log messages, its answer — and ends with its last answer; a GET opens the
 * session's own stream for the rest. The endpoint (endpoint.ts) has checked the request's
 * credentials, session and body before it gets here.
 *
 * Resumable: each event has an id and is kept a while (session-events.ts); a client whose stream
 * broke reconnects with `Last-Event-ID` and gets the rest of it. A session that negotiated 2025-11-25
 * or later gets a priming event first on every stream (an id, no data) and the `retry` delay; the
 * session's version decides, not a request's header, since a client that negotiated it reads them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  LATEST_PROTOCOL_VERSION,
  type MessageExtraInfo,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { writeHead } from "../http-response.ts";
import { SessionEvents } from "./session-events.ts";

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** The session's own stream (GET), beside one per request. */
const SESSION_STREAM = "session";
/** Messages one POST may hold. */
const MAX_BATCH = 100;
/** Comments on open streams so proxies and clients do not take a quiet stream for a dead one. */
const KEEP_ALIVE_MS = 15_000;
/** The first version whose clients read an event without data (a priming event). */
const PRIMING_SINCE = "2025-11-25";

interface Stream {
  /** The response the stream is written to; undefined while its client is away (it may resume). */
  response: Response | undefined;
  /** The requests whose answers it still owes: it ends after the last. */
  readonly owed: Set<RequestId>;
}

export class SessionTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  private readonly streams = new Map<string, Stream>();
  /** Each request in flight's stream. */
  private readonly streamOf = new Map<RequestId, string>();
  private readonly events = new SessionEvents();
  private initialized = false;
  /** The version the session negotiated at initialize. */
  private version = LATEST_PROTOCOL_VERSION;
  private streamCount = 0;
  private closed = false;
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(
    readonly sessionId: string,
    /** The `retry` sent with each priming event: how long a client waits before it reconnects. */
    private readonly retryMs: number,
  ) {}

  async start(): Promise<void> {}

  /** One HTTP request of the session, its body (POST) already read and checked as JSON-RPC. */
  handle(request: Request, response: Response, body: unknown) {
    if (this.closed) return answer(response, 404, -32001, "Session not found");
    if (request.method === "POST") return this.post(request, response, body);
    const refused = this.versionProblem(request);
    if (refused !== undefined) return answer(response, 400, -32000, refused);
    if (request.method === "GET") return this.get(request, response);
    writeHead(response, 200);
    response.end();
    void this.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.closed) return;
    const answered =
      isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message) ? message.id : undefined;
    const related = answered ?? options?.relatedRequestId;
    const streamId = related === undefined ? undefined : this.streamOf.get(related);
    if (answered !== undefined && streamId === undefined)
      throw new Error(`no stream is open for request ${String(answered)}`);
    // What relates to a request whose stream has ended goes in the session's own.
    const target = streamId ?? SESSION_STREAM;
    const data = JSON.stringify(message);
    const id = this.events.store(target, data);
    const stream = this.streams.get(target);
    if (stream?.response !== undefined) writeEvent(stream.response, id, data);
    if (answered === undefined || stream === undefined) return;
    stream.owed.delete(answered);
    this.streamOf.delete(answered);
    if (stream.owed.size === 0) {
      this.streams.delete(target);
      stream.response?.end();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    for (const stream of this.streams.values()) stream.response?.end();
    this.streams.clear();
    this.streamOf.clear();
    this.onclose?.();
  }

  private post(request: Request, response: Response, body: unknown) {
    const accept = String(request.headers.accept ?? "");
    if (!accept.includes("application/json") || !accept.includes("text/event-stream"))
      return answer(
        response,
        406,
        -32000,
        "Not Acceptable: Client must accept both application/json and text/event-stream",
      );
    if (!/^application\/json\s*(;|$)/i.test(String(request.headers["content-type"] ?? "")))
      return answer(response, 415, -32000, "Unsupported Media Type: Content-Type must be application/json");
    const messages = (Array.isArray(body) ? body : [body]) as JSONRPCMessage[];
    if (messages.length > MAX_BATCH)
      return answer(response, 400, -32600, `Invalid Request: a batch holds at most ${MAX_BATCH} messages`);
    const initialize = messages.find((message) => isInitializeRequest(message));
    if (initialize !== undefined) {
      if (this.initialized)
        return answer(response, 400, -32600, "Invalid Request: Server already initialized");
      if (messages.length > 1)
        return answer(response, 400, -32600, "Invalid Request: Only one initialization request is allowed");
      this.initialized = true;
      const asked = (initialize as unknown as { params: { protocolVersion: string } }).params.protocolVersion;
      this.version = SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
    } else {
      if (!this.initialized) return answer(response, 400, -32000, "Bad Request: Server not initialized");
      const refused = this.versionProblem(request);
      if (refused !== undefined) return answer(response, 400, -32000, refused);
    }
    const extra: MessageExtraInfo = { requestInfo: { headers: request.headers } };
    const requests = messages.filter(isJSONRPCRequest);
    if (requests.length === 0) {
      writeHead(response, 202);
      response.end();
    } else {
      const streamId = String(++this.streamCount);
      const stream: Stream = { response: undefined, owed: new Set(requests.map((r) => r.id)) };
      for (const id of stream.owed) this.streamOf.set(id, streamId);
      this.streams.set(streamId, stream);
      this.attach(streamId, stream, response, true);
    }
    for (const message of messages) this.onmessage?.(message, extra);
  }

  private get(request: Request, response: Response) {
    if (!String(request.headers.accept ?? "").includes("text/event-stream"))
      return answer(response, 406, -32000, "Not Acceptable: Client must accept text/event-stream");
    const lastEventId = request.headers["last-event-id"];
    if (typeof lastEventId === "string" && lastEventId !== "") return this.resume(lastEventId, response);
    const own = this.streams.get(SESSION_STREAM);
    if (own?.response !== undefined)
      return answer(response, 409, -32000, "Conflict: Only one SSE stream is allowed per session");
    const stream: Stream = own ?? { response: undefined, owed: new Set() };
    this.streams.set(SESSION_STREAM, stream);
    this.attach(SESSION_STREAM, stream, response, true);
  }

  /** A client back for a stream it lost: the events it missed, then the rest as it comes. */
  private resume(lastEventId: string, response: Response) {
    const streamId = this.events.streamOf(lastEventId);
    if (streamId === undefined)
      return answer(
        response,
        400,
        -32000,
        "Bad Request: that event is no longer kept; the stream cannot be resumed",
      );
    const stream = this.streams.get(streamId);
    if (stream?.response !== undefined)
      return answer(response, 409, -32000, "Conflict: the stream is open on another connection");
    this.openEventStream(response);
    for (const { id, data } of this.events.after(lastEventId))
      if (data !== "") writeEvent(response, id, data);
    if (stream === undefined && streamId !== SESSION_STREAM) {
      // Every answer it owed has been replayed.
      response.end();
      return;
    }
    const resumed = stream ?? { response: undefined, owed: new Set<RequestId>() };
    this.streams.set(streamId, resumed);
    this.attach(streamId, resumed, response, false);
  }

  /** Starts writing `stream` to `response` (an event stream), with a priming event when it opens. */
  private attach(streamId: string, stream: Stream, response: Response, opening: boolean): void {
    if (opening) {
      this.openEventStream(response);
      if (this.version >= PRIMING_SINCE)
        write(response, `id: ${this.events.store(streamId, "")}\nretry: ${this.retryMs}\ndata: \n\n`);
    }
    stream.response = response;
    response.once("close", () => {
      // The client went away: what the stream still owes is kept, for it to resume.
      if (stream.response === response) stream.response = undefined;
    });
    this.keepAlive ??= setInterval(() => this.beat(), KEEP_ALIVE_MS).unref();
  }

  private beat(): void {
    for (const stream of this.streams.values())
      if (stream.response !== undefined) write(stream.response, ": keep-alive\n\n");
  }

  /**
   * Answers 200 with the event stream's headers, sent at once: the client's stream is open when it
   * has them, not at the first event (a quiet session's GET would wait for the first keep-alive).
   */
  private openEventStream(response: Response): void {
    writeHead(response, 200, this.streamHeaders(response));
    // HTTP/2 sends its headers with writeHead; HTTP/1.1 holds them for the first write unless flushed.
    if ("flushHeaders" in response) response.flushHeaders();
  }

  private streamHeaders(response: Response): Record<string, string> {
    return {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      "mcp-session-id": this.sessionId,
      // HTTP/2 has no connection-level headers.
      ...("stream" in response ? {} : { connection: "keep-alive" }),
    };
  }

  /** Why a request's MCP-Protocol-Version header is refused; undefined when it is absent or supported. */
  private versionProblem(request: Request): string | undefined {
    const version = request.headers["mcp-protocol-version"];
    if (typeof version !== "string" || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
    return `Bad Request: Unsupported protocol version: ${version.slice(0, 40)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")})`;
  }
}

function writeEvent(response: Response, id: string, data: string): void {
  write(response, `event: message\nid: ${id}\ndata: ${data}\n\n`);
}

/** Writes to an open stream; nothing once it has ended. (@types/node types the protocols' writes apart.) */
function write(response: Response, text: string): void {
  if (!response.writableEnded) (response as { write(chunk: string): boolean }).write(text);
}

/** A JSON-RPC error answered over plain HTTP. */
function answer(response: Response, status: number, code: number, message: string): void {
  writeHead(response, status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
