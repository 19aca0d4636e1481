import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as http2 from "node:http2";
import type * as net from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { type MethodRoute, methodPath } from "./rpc.ts";

/** Bounds on every connection, whatever protocol it speaks (config `server.*`, in ms here). */
export interface ConnectionLimits {
  /** A new connection must send its first bytes, and an HTTP/2 one then its SETTINGS, within this. */
  readonly handshakeTimeoutMs: number;
  /** HTTP/1.1 request headers, and the first body bytes (or end) of an HTTP/2 stream, within this. */
  readonly requestHeaderTimeoutMs: number;
  /** The whole request body of a call that sends one message, from its headers (see RequestBodyDeadline). */
  readonly requestBodyTimeoutMs: number;
  /** A connection without a call in flight for this long is closed. */
  readonly idleTimeoutMs: number;
  /** Open connections beyond this are refused. */
  readonly maxConnections: number;
}

/**
 * Holds one HTTP/2 session to the limits: its SETTINGS must arrive before the connection's handshake
 * timer fires (one timeout from accept, not one for the first bytes and another for SETTINGS); a
 * stream that sends neither body bytes nor END_STREAM within the header timeout is reset (CANCEL);
 * a session with no open stream for the idle timeout is closed with GOAWAY. An open stream, such as
 * a watch, keeps its session busy however quiet it is.
 */
export class Http2SessionGuard {
  private readonly session: http2.ServerHttp2Session;
  private readonly limits: ConnectionLimits;
  private readonly idle: IdleConnections;
  /** Re-armed with refresh() each time the last stream closes, so a busy session costs no timers. */
  private readonly idleTimer: NodeJS.Timeout;
  private openStreams = 0;
  /** Streams that have not yet started their request body, with the time they opened (oldest first). */
  private readonly awaitingBody = new Map<http2.ServerHttp2Stream, number>();
  private bodyCheck: NodeJS.Timeout | undefined;

  /**
   * `handshake`: the connection's handshake timer, still running; cleared once SETTINGS arrive.
   * `idle`: where the session is listed while it has no open stream (to be shed first at the cap).
   */
  constructor(
    session: http2.ServerHttp2Session,
    limits: ConnectionLimits,
    handshake: NodeJS.Timeout,
    idle: IdleConnections,
  ) {
    this.session = session;
    this.limits = limits;
    session.once("remoteSettings", () => clearTimeout(handshake));
    this.idleTimer = setTimeout(() => this.closeIfIdle(), limits.idleTimeoutMs).unref();
    idle.http2(session, true);
    session.once("close", () => {
      clearTimeout(handshake);
      clearTimeout(this.idleTimer);
      clearTimeout(this.bodyCheck);
      idle.http2(session, false);
    });
    this.idle = idle;
  }

  /** Call for every stream of the session, before it is handed to a protocol handler. */
  streamOpened(stream: http2.ServerHttp2Stream): void {
    if (this.openStreams++ === 0) this.idle.http2(this.session, false);
    this.awaitingBody.set(stream, Date.now());
    this.bodyCheck ??= setTimeout(() => this.checkBodies(), this.limits.requestHeaderTimeoutMs).unref();
    stream.once("close", () => {
      this.awaitingBody.delete(stream);
      if (--this.openStreams > 0) return;
      this.idleTimer.refresh();
      if (!this.session.closed && !this.session.destroyed) this.idle.http2(this.session, true);
    });
  }

  private closeIfIdle(): void {
    // Fired while streams were open: the last one to close re-arms the timer.
    if (this.openStreams === 0) this.session.close();
  }

  /** One timer per session for all its streams, due when the oldest waiting stream runs out of time. */
  private checkBodies(): void {
    this.bodyCheck = undefined;
    const now = Date.now();
    for (const [stream, openedAt] of this.awaitingBody) {
      if (hasStartedBody(stream)) this.awaitingBody.delete(stream);
      else if (now - openedAt >= this.limits.requestHeaderTimeoutMs) {
        this.awaitingBody.delete(stream);
        stream.close(http2.constants.NGHTTP2_CANCEL);
      } else {
        this.bodyCheck = setTimeout(
          () => this.checkBodies(),
          openedAt + this.limits.requestHeaderTimeoutMs - now,
        ).unref();
        return;
      }
    }
  }
}

/** Body bytes arrived (read by the handler or still buffered), or the client ended its side. */
function hasStartedBody(stream: http2.ServerHttp2Stream): boolean {
  return stream.readableDidRead || stream.readableLength > 0 || stream.state.remoteClose === 1;
}

/**
 * The deadline for the whole request body of a call that sends one message (unary and server
 * streaming, and any path that is no method), counted from its headers, on every protocol: a client
 * that sends headers and part of a body and then nothing would otherwise hold the call, its buffers
 * and (HTTP/1.1) its connection forever. Client- and bidi-streaming calls send their messages over
 * time and are exempt.
 */
export class RequestBodyDeadline {
  private readonly timeoutMs: number;
  private readonly exemptPaths: ReadonlySet<string>;

  constructor(routes: readonly MethodRoute[], timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.exemptPaths = new Set(
      routes
        .filter(
          ({ method }) => method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
        )
        .map(({ method }) => methodPath(method)),
    );
  }

  /** The error a call whose body came too late is answered with. */
  get error(): ConnectError {
    return new ConnectError(
      `the request body did not arrive within ${this.timeoutMs / 1000} s of its headers ` +
        "(server.request_body_timeout_seconds); send the whole request without pausing",
      Code.DeadlineExceeded,
    );
  }

  /**
   * A Connect or gRPC-Web request (HTTP/1.1, or HTTP/2 through node's compatibility layer) whose body
   * is still incomplete at the deadline fails with `error` as connect-node reads it, so connect-node
   * answers DEADLINE_EXCEEDED in the call's own protocol; the connection (HTTP/1.1, whose unread
   * rest of body would be taken for the next request) or the stream (HTTP/2) is then closed.
   */
  bound(
    request: http.IncomingMessage | http2.Http2ServerRequest,
    response: http.ServerResponse | http2.Http2ServerResponse,
  ): void {
    if (this.exemptPaths.has(request.url?.split("?", 1)[0] ?? "")) return;
    const timer = setTimeout(() => {
      if ("stream" in request) {
        if (hasReceivedBody(request.stream)) return;
        closeOnceAnswered(request.stream);
      } else if (request.complete) return;
      // Whoever reads the body listens for its errors; with no reader there is no one to answer.
      if (request.listenerCount("error") > 0) request.emit("error", this.error);
      else request.destroy();
    }, this.timeoutMs).unref();
    response.once("close", () => clearTimeout(timer));
  }

  /**
   * A native gRPC stream (served by grpc-js) whose body is still incomplete at the deadline is
   * answered DEADLINE_EXCEEDED (trailers only) and closed.
   */
  boundGrpcStream(
    stream: http2.ServerHttp2Stream,
    path: string,
    respond: (error: ConnectError) => void,
  ): void {
    if (this.exemptPaths.has(path)) return;
    const timer = setTimeout(() => {
      if (hasReceivedBody(stream)) return;
      if (stream.headersSent) {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        return;
      }
      closeOnceAnswered(stream);
      respond(this.error);
    }, this.timeoutMs).unref();
    stream.once("close", () => clearTimeout(timer));
  }
}

/**
 * Resets the stream with NO_ERROR once the answer is out: node leaves a stream whose client never
 * ends its side open after the server ended its own (RFC 9113 §8.1 lets a server stop it so).
 */
function closeOnceAnswered(stream: http2.ServerHttp2Stream): void {
  stream.once("finish", () => stream.close(http2.constants.NGHTTP2_NO_ERROR));
}

/** How long a client answered before its body was read has to end its side of the stream. */
const UNREAD_BODY_GRACE_MS = 1_000;

/**
 * For a stream answered before its body was read (refused from its headers): whatever of the body
 * still comes is dropped as it comes, never buffered, and the stream is reset only if its client has
 * not ended its side within a grace period. Resetting at once, as closeOnceAnswered does for a client
 * stalled mid-body, loses the answer on node 22's HTTP/2 client when the reset lands beside it (over
 * TLS, in one read) while the client is still sending.
 */
export function dropUnreadBody(stream: http2.ServerHttp2Stream): void {
  stream.once("finish", () => {
    if (hasReceivedBody(stream)) return;
    stream.resume();
    const timer = setTimeout(() => {
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    }, UNREAD_BODY_GRACE_MS).unref();
    stream.once("close", () => clearTimeout(timer));
  });
}

/** The client ended its side of the stream: the whole request body is here. */
function hasReceivedBody(stream: http2.ServerHttp2Stream): boolean {
  return stream.destroyed || stream.state.remoteClose === 1;
}

/**
 * An HTTP/1.1 response sent before its request body was read to the end (a body over the size limit
 * is rejected unread) says `Connection: close` and closes the socket once sent: the unread rest of
 * the body would otherwise stall, or be parsed as, the next request on the connection.
 */
export class ResponseClosingOnUnreadBody extends http.ServerResponse {
  override writeHead(
    statusCode: number,
    statusMessage?: string,
    headers?: http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
  ): this;
  override writeHead(
    statusCode: number,
    headers?: http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
  ): this;
  override writeHead(
    statusCode: number,
    statusMessageOrHeaders?: string | http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
    headers?: http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
  ): this {
    if (!this.req.complete) this.shouldKeepAlive = false;
    return typeof statusMessageOrHeaders === "string"
      ? super.writeHead(statusCode, statusMessageOrHeaders, headers)
      : super.writeHead(statusCode, statusMessageOrHeaders);
  }
}

/** Connection figures for /metrics, kept by the transport. */
export interface ConnectionCounts {
  /** Open now (all protocols, TLS included). */
  open: number;
  /** Refused at the cap with no idle connection to close instead. */
  refused: number;
  /** Idle connections closed at the cap to admit a new one. */
  shed: number;
}

/**
 * The connections with no call in flight, each list in the order they became idle, so that at the
 * cap the one idle longest can be closed to admit a new connection: a client holding many silent
 * connections loses them before anyone is refused. Three kinds: cleartext connections that have
 * not yet said which protocol they speak, HTTP/2 sessions without an open stream, and HTTP/1.1
 * connections between requests. (A TLS connection still in its handshake is bounded by the
 * handshake timeout instead.)
 */
export class IdleConnections {
  private readonly silentSockets = new Set<net.Socket>();
  private readonly http2Sessions = new Set<http2.ServerHttp2Session>();
  private readonly http1Sockets = new Set<net.Socket>();
  private readonly watched = new WeakSet<net.Socket>();

  /** A cleartext connection that has sent nothing yet (true), or has now spoken or closed (false). */
  silent(socket: net.Socket, idle: boolean): void {
    move(this.silentSockets, socket, idle);
  }

  http2(session: http2.ServerHttp2Session, idle: boolean): void {
    move(this.http2Sessions, session, idle);
  }

  /** An HTTP/1.1 connection between requests (true), or with one in flight (false). */
  http1(socket: net.Socket, idle: boolean): void {
    if (!this.watched.has(socket)) {
      this.watched.add(socket);
      socket.once("close", () => this.http1Sockets.delete(socket));
    }
    move(this.http1Sockets, socket, idle && !socket.destroyed);
  }

  /** Closes the connection idle the longest, silent ones first; false when every connection is busy. */
  closeOne(): boolean {
    for (const socket of this.silentSockets) {
      this.silentSockets.delete(socket);
      socket.destroy();
      return true;
    }
    for (const session of this.http2Sessions) {
      this.http2Sessions.delete(session);
      session.destroy();
      return true;
    }
    for (const socket of this.http1Sockets) {
      this.http1Sockets.delete(socket);
      socket.destroy();
      return true;
    }
    return false;
  }
}

/** Puts `item` at the end of `set` (idle from now), or takes it out. */
function move<T>(set: Set<T>, item: T, add: boolean): void {
  set.delete(item);
  if (add) set.add(item);
}

/** What the transport did with a connection that came at the cap. */
export type AtCapacity = "shed" | "refused";

/**
 * Logs what happens at the connection cap, at warn: the first time at once, then at most one line
 * per `intervalMs` with how many idle connections were closed and how many new ones refused since
 * the last line, so a flood of connections cannot flood the log.
 */
export function capacityLog(
  logger: Logger,
  maxConnections: number,
  intervalMs = 60_000,
): (what: AtCapacity, open: number, reason?: string) => void {
  let quietUntil = 0;
  const since = { shed: 0, refused: 0 };
  return (what, open, reason = "max_connections reached") => {
    since[what]++;
    const now = Date.now();
    if (now < quietUntil) return;
    quietUntil = now + intervalMs;
    logger.warn(
      { maxConnections, open, shed: since.shed, refused: since.refused, reason },
      since.refused > 0
        ? "refusing new connections; raise server.max_connections (and the open-files limit) or find the client holding them"
        : "at server.max_connections: closing idle connections to admit new ones",
    );
    since.shed = 0;
    since.refused = 0;
  };
}

/** Descriptors kept out of the connection cap: database files, MCP server pipes, logs, config reads. */
const RESERVED_DESCRIPTORS = 64;

/**
 * The cap to apply: `configured`, lowered to fit the process's open-files limit. Past that limit
 * accept() fails and libuv silently closes the waiting connections, so nothing would be logged;
 * below it, node refuses them itself and the refusal is logged.
 */
export function fitMaxConnections(configured: number, openFilesLimit: number | undefined): number {
  if (openFilesLimit === undefined) return configured;
  return Math.max(1, Math.min(configured, openFilesLimit - RESERVED_DESCRIPTORS));
}

/** The soft RLIMIT_NOFILE (node raises it to the hard limit at start); undefined off Linux. */
export function readOpenFilesLimit(): number | undefined {
  let limits: string;
  try {
    limits = readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1];
  return soft === undefined ? undefined : Number(soft);
}
