import { once } from "node:events";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { CLIENT_CERTIFICATE_HEADER, clientCertificateHeader } from "../../auth/index.ts";
import type { CorsConfig } from "../../config/index.ts";
import { connectRequestListener } from "./connect-adapter.ts";
import {
  type ConnectionCounts,
  type ConnectionLimits,
  capacityLog,
  fitMaxConnections,
  Http2SessionGuard,
  IdleConnections,
  RequestBodyDeadline,
  ResponseClosingOnUnreadBody,
  readOpenFilesLimit,
} from "./connections.ts";
import {
  COMPRESSED_WITHOUT_ENCODING,
  declaresNoCompression,
  refuseCompressedMessages,
} from "./grpc-envelope.ts";
import { addRoutesToGrpcServer, grpcTimeoutProblem, respondWithGrpcError } from "./grpc-js-adapter.ts";
import { RequestDecoder } from "./request-decoder.ts";
import { type CredentialsCheck, type HostRules, RequestGate } from "./request-gate.ts";
import type { MethodRoute } from "./rpc.ts";

export interface TransportOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly routes: readonly MethodRoute[];
  /** Largest request message accepted, on every protocol. */
  readonly maxMessageBytes: number;
  /** Aborted when the server starts draining; long streams (watch) end on it. */
  readonly shutdownSignal: AbortSignal;
  readonly limits: ConnectionLimits;
  /** Where refused connections are reported. */
  readonly logger: Logger;
  /** Plain-HTTP endpoints on the same port (health probes): true when it answered the request. */
  readonly httpEndpoints?: HttpEndpoints;
  /** The names the server answers to, and which web pages may call it (request-gate.ts). */
  readonly hosts: HostRules;
  readonly cors: CorsConfig;
  /** Refuses a call from its credentials before its body is read (request-gate.ts). */
  readonly credentials?: CredentialsCheck;
  /** TLS on the port (every protocol); absent = cleartext (h2c and HTTP/1.1). */
  readonly tls?: TlsCredentials;
  /** Kept up to date here, read by /metrics. */
  readonly counts?: ConnectionCounts;
}

/** PEM contents of the server's certificate chain and key, and of the CA that verifies clients (mTLS). */
export interface TlsCredentials {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Client certificates are asked for and verified against this; calls without one still connect. */
  readonly clientCa?: Buffer | undefined;
}

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;
/** Plain-HTTP endpoints on the service port: true when it answered the request. */
export type HttpEndpoints = (request: NodeRequest, response: NodeResponse) => boolean;

export interface RunningTransport {
  readonly port: number;
  /** New TLS connections use these credentials; open ones keep theirs. Throws if they do not load. */
  reloadTls(credentials: TlsCredentials): void;
  /** Stops accepting, lets in-flight calls finish for up to `graceMs`, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

/** Connections node may accept past the cap, each closing an idle one (within the descriptors kept free). */
const SHEDDING_HEADROOM = 16;

const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Fails with a clear message when `port` on `host` cannot be bound, before the server loads anything
 * (port 0 always can). The socket is closed again at once; the transport binds it for real later.
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  try {
    probe.listen(port, host);
    await once(probe, "listening");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "EADDRINUSE" ? "is in use (another wayfind?)" : `cannot be bound (${code ?? String(error)})`;
    throw new Error(`port ${port} on ${host} ${why}; stop that process or choose another --port`);
  } finally {
    probe.close();
  }
}

/**
 * One port for every protocol:
 * - HTTP/2 streams with `content-type: application/grpc…` (native gRPC) go to @grpc/grpc-js;
 * - every other HTTP/2 stream (Connect, gRPC-Web) and every HTTP/1.1 request goes to connect-node,
 *   which speaks Connect (binary and JSON), gRPC-Web and gRPC.
 * Both serve the same MethodRoutes, so each handler exists once, and both answer errors through the
 * one mapping of rpc-errors.ts.
 */
export async function startTransport(options: TransportOptions): Promise<RunningTransport> {
  const { limits } = options;
  const decoder = new RequestDecoder();
  const gate = new RequestGate(
    options.hosts,
    options.cors,
    new RequestBodyDeadline(options.routes, limits.requestBodyTimeoutMs),
    options.credentials,
  );
  const serveConnect = connectRequestListener({
    routes: options.routes,
    readMaxBytes: options.maxMessageBytes,
    shutdownSignal: options.shutdownSignal,
    decoder,
    refusedUnread: (request) => gate.refusedUnread(request),
  });
  const connectHandler: typeof serveConnect = (request, response) => {
    if (gate.handles(request, response)) return;
    if (options.httpEndpoints?.(request, response)) return;
    serveConnect(request, response);
  };

  const grpcServer = new grpc.Server({
    "grpc.max_receive_message_length": options.maxMessageBytes,
    "grpc.max_send_message_length": 64 * 1024 * 1024,
    // channelz costs CPU on every call and nothing here reads it.
    "grpc.enable_channelz": 0,
  });
  addRoutesToGrpcServer(grpcServer, options.routes, options.shutdownSignal, decoder);

  // grpc-js and node's HTTP/2 compatibility layer each listen for 'stream' on a server object. We
  // give each its own (never listening) object and hand every stream to exactly one of them.
  const grpcStreams = http2.createServer();
  (grpcServer as unknown as GrpcJsInternals)._setupHandlers(grpcStreams, []);
  const connectStreams = http2.createServer({}, connectHandler);

  const h2 = http2.createServer({ maxSessionMemory: 64 });
  const sessions = new Map<http2.ServerHttp2Session, Http2SessionGuard>();
  const idle = new IdleConnections();
  /** Starts serving a cleartext HTTP/2 connection, whose handshake timer runs on until its SETTINGS. */
  const serveHttp2 = (socket: net.Socket, handshake: NodeJS.Timeout) => {
    const guardSession = (session: http2.ServerHttp2Session) => {
      sessions.set(session, new Http2SessionGuard(session, limits, handshake, idle));
      session.once("close", () => sessions.delete(session));
      grpcStreams.emit("session", session);
    };
    // node creates the session and emits 'session' within emit('connection'): this listener gets
    // this connection's session, and is never left behind for another one.
    h2.once("session", guardSession);
    h2.emit("connection", socket);
    h2.removeListener("session", guardSession);
  };
  h2.on(
    "stream",
    (
      stream: http2.ServerHttp2Stream,
      headers: http2.IncomingHttpHeaders,
      flags: number,
      rawHeaders: string[],
    ) => {
      sessions.get(stream.session as http2.ServerHttp2Session)?.streamOpened(stream);
      setClientCertificate(headers, stream.session?.socket);
      if (!isNativeGrpc(headers["content-type"])) {
        connectStreams.emit("stream", stream, headers, flags, rawHeaders);
        return;
      }
      // grpc-js would answer a malformed grpc-timeout with INTERNAL, echoing it.
      const timeoutProblem = grpcTimeoutProblem(headers["grpc-timeout"]);
      if (timeoutProblem) {
        respondWithGrpcError(stream, timeoutProblem);
        return;
      }
      const serveGrpc = () => {
        if (declaresNoCompression(headers))
          refuseCompressedMessages(stream, () => {
            // Closed at once, so grpc-js (listening after us) drops the message unread.
            if (stream.headersSent) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
            else {
              respondWithGrpcError(stream, COMPRESSED_WITHOUT_ENCODING);
              stream.close(http2.constants.NGHTTP2_NO_ERROR);
            }
          });
        grpcStreams.emit("stream", stream, headers, flags, rawHeaders);
      };
      const admitted = gate.admitsGrpcStream(stream, headers, (error) => respondWithGrpcError(stream, error));
      // A replica judging an API key after its fence: the message waits unread (flow control) meanwhile.
      if (admitted instanceof Promise)
        admitted.then((admit) => {
          if (admit && !stream.destroyed) serveGrpc();
        });
      else if (admitted) serveGrpc();
    },
  );
  // HTTP/1.1 keep-alive connections are closed as soon as they are idle once draining starts.
  let draining = false;
  const h1 = http.createServer(
    {
      // No Nagle: with several calls in flight on one connection, a small response would otherwise
      // wait for the ACK of the previous one, which the client may delay by up to 40 ms.
      noDelay: true,
      ServerResponse: ResponseClosingOnUnreadBody,
      headersTimeout: limits.requestHeaderTimeoutMs,
      // Bodies are bounded per call by RequestBodyDeadline, which exempts streaming requests.
      requestTimeout: 0,
      keepAliveTimeout: limits.idleTimeoutMs,
      // How often node looks for requests past headersTimeout.
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(limits.requestHeaderTimeoutMs / 4)),
    },
    (request, response) => {
      if (draining) response.setHeader("connection", "close");
      response.once("close", () => {
        if (draining) request.socket.end();
      });
      setClientCertificate(request.headers, request.socket);
      const { socket } = request;
      idle.http1(socket, false);
      response.once("close", () => idle.http1(socket, true));
      connectHandler(request, response);
    },
  );

  // The HTTP/1.1 server is the listener, so node counts its connections (for the cap) and checks
  // request headers against headersTimeout, which it only does for a listening server. Its own
  // connection handler is taken off and called only for connections that are not HTTP/2.
  const serveHttp1 = h1.listeners("connection")[0] as (socket: net.Socket) => void;
  h1.removeListener("connection", serveHttp1);
  const maxConnections = fitMaxConnections(limits.maxConnections, readOpenFilesLimit());
  if (maxConnections < limits.maxConnections)
    options.logger.info(
      { configured: limits.maxConnections, applied: maxConnections },
      "server.max_connections lowered to fit the open-files limit (ulimit -n)",
    );
  // Node itself refuses only past the headroom: up to it, an idle connection is closed instead.
  h1.maxConnections = maxConnections + SHEDDING_HEADROOM;
  const counts = options.counts ?? { open: 0, refused: 0, shed: 0 };
  const logCapacity = capacityLog(options.logger, maxConnections);
  h1.on("drop", () => {
    counts.refused++;
    logCapacity("refused", sockets.size);
  });

  // With TLS, ALPN picks the protocol: h2 for gRPC and HTTP/2 clients, http/1.1 for the rest.
  const secure = options.tls
    ? tls.createServer({
        ...secureContextOptions(options.tls),
        ALPNProtocols: ["h2", "http/1.1"],
        handshakeTimeout: limits.handshakeTimeoutMs,
      })
    : undefined;
  secure?.on("secureConnection", (socket: tls.TLSSocket) => {
    if (socket.alpnProtocol === "h2") {
      // The HTTP/2 preface and SETTINGS must follow the TLS handshake within the same bound.
      const handshake = setTimeout(() => socket.destroy(), limits.handshakeTimeoutMs).unref();
      socket.once("close", () => clearTimeout(handshake));
      serveHttp2(socket, handshake);
    } else {
      idle.http1(socket, true);
      serveHttp1.call(h1, socket);
    }
  });
  // A failed handshake (a cleartext client, a bad certificate) only closes that connection.
  secure?.on("tlsClientError", (_error, socket) => socket.destroy());

  // Cleartext HTTP/2 (prior knowledge) and HTTP/1.1 share the port: peek at the first bytes.
  const sockets = new Set<net.Socket>();
  h1.on("connection", (socket: net.Socket) => {
    if (sockets.size >= maxConnections) {
      if (!idle.closeOne()) {
        counts.refused++;
        logCapacity("refused", sockets.size, "max_connections reached, every connection busy");
        socket.destroy();
        return;
      }
      counts.shed++;
      logCapacity("shed", sockets.size);
    }
    sockets.add(socket);
    counts.open = sockets.size;
    // The HTTP/1.1 server's sockets are half-open (it answers a request whose client has already
    // sent FIN), and nothing else here would notice a FIN: a silent connection, or an HTTP/2 session,
    // whose client left would hold its descriptor until a timeout. The HTTP/1.1 branch restores it.
    socket.allowHalfOpen = false;
    if (secure) {
      socket.once("close", () => {
        sockets.delete(socket);
        counts.open = sockets.size;
      });
      socket.on("error", () => socket.destroy());
      secure.emit("connection", socket);
      return;
    }
    // A connection that never says anything would hold its descriptor forever.
    const handshake = setTimeout(() => socket.destroy(), limits.handshakeTimeoutMs).unref();
    idle.silent(socket, true);
    socket.once("close", () => {
      clearTimeout(handshake);
      sockets.delete(socket);
      counts.open = sockets.size;
      idle.silent(socket, false);
    });
    socket.once("data", (first: Buffer) => {
      idle.silent(socket, false);
      socket.pause();
      socket.unshift(first);
      // The HTTP/2 session picks up the unshifted bytes itself when it attaches; resuming the
      // socket first would let them flow away unread. The HTTP/1 server wants a flowing socket.
      if (first.subarray(0, 3).equals(HTTP2_PREFACE.subarray(0, 3))) serveHttp2(socket, handshake);
      else {
        clearTimeout(handshake);
        socket.allowHalfOpen = true;
        idle.http1(socket, true);
        serveHttp1.call(h1, socket);
        socket.resume();
      }
    });
    socket.on("error", () => socket.destroy());
  });
  h1.listen(options.port, options.host);
  await once(h1, "listening");
  // After listening, an accept failure (EMFILE: out of descriptors) is logged, not fatal.
  h1.on("error", (error: NodeJS.ErrnoException) =>
    logCapacity("refused", sockets.size, error.code ?? error.message),
  );
  const address = h1.address() as net.AddressInfo;

  return {
    port: address.port,
    reloadTls(credentials) {
      if (!secure) throw new Error("the server was started without TLS; restart it with server.tls");
      secure.setSecureContext(secureContextOptions(credentials));
    },
    async close(graceMs: number) {
      draining = true;
      // Also closes the idle HTTP/1.1 keep-alive connections.
      const closed = new Promise<void>((resolve) => h1.close(() => resolve()));
      for (const session of sessions.keys()) session.close(); // GOAWAY: in-flight streams finish
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await closed;
      clearTimeout(timer);
      grpcServer.forceShutdown();
      await decoder.close();
    },
  };
}

function secureContextOptions(credentials: TlsCredentials): tls.SecureContextOptions & tls.TlsOptions {
  return {
    cert: credentials.cert,
    key: credentials.key,
    ...(credentials.clientCa
      ? // Asked for and verified, not required: callers with an API key or token connect without one.
        { ca: credentials.clientCa, requestCert: true, rejectUnauthorized: false }
      : {}),
  };
}

/**
 * Sets the header that tells src/auth a call's verified client certificate, from the connection
 * only: whatever a client sent under that name is removed first, so it can never be forged.
 */
function setClientCertificate(
  headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders,
  socket: net.Socket | tls.TLSSocket | undefined,
): void {
  delete headers[CLIENT_CERTIFICATE_HEADER];
  if (socket && "encrypted" in socket && socket.encrypted) {
    const value = clientCertificateHeader(socket as tls.TLSSocket);
    if (value !== undefined) headers[CLIENT_CERTIFICATE_HEADER] = value;
  }
}

function isNativeGrpc(contentType: string | undefined): boolean {
  return (
    contentType?.startsWith("application/grpc") === true && !contentType.startsWith("application/grpc-web")
  );
}

/** The one grpc-js internal we rely on (pinned version): attach its handlers to an HTTP/2 server. */
interface GrpcJsInternals {
  _setupHandlers(server: http2.Http2Server, extraInterceptors: unknown[]): void;
}
