/**
 * The wayfind TypeScript client: the generated messages and service descriptors (gen/ts, from
 * proto/), and `connectWayfind`, which opens typed clients of the four services over native gRPC
 * (HTTP/2, what agents use) or the Connect protocol (HTTP/1.1, through proxies that lack HTTP/2).
 */
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { KeyService } from "../../../gen/ts/wayfind/v1/keys_pb.ts";
import { SkillService } from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../../gen/ts/wayfind/v1/usage_pb.ts";

export * from "../../../gen/ts/wayfind/v1/common_pb.ts";
export * from "../../../gen/ts/wayfind/v1/events_pb.ts";
export * from "../../../gen/ts/wayfind/v1/keys_pb.ts";
export * from "../../../gen/ts/wayfind/v1/skills_pb.ts";
export * from "../../../gen/ts/wayfind/v1/tools_pb.ts";
export * from "../../../gen/ts/wayfind/v1/usage_pb.ts";

export interface WayfindClients {
  readonly tools: Client<typeof ToolDiscoveryService>;
  readonly skills: Client<typeof SkillService>;
  readonly usage: Client<typeof UsageService>;
  /** API key administration (role admin): what a console uses. */
  readonly keys: Client<typeof KeyService>;
}

export interface ConnectOptions {
  /** "grpc" (default: native gRPC over HTTP/2) or "connect" (Connect binary over HTTP/1.1). */
  readonly protocol?: "grpc" | "connect";
  /** An API key (`wf_…`) or token, sent as `authorization: Bearer …` with every call. */
  readonly apiKey?: string;
  /** PEM of the CA that signed the server's certificate, for an `https://` server with a private CA. */
  readonly ca?: string | Uint8Array;
  /** More interceptors, e.g. to add other metadata to every call. */
  readonly interceptors?: Interceptor[];
}

/**
 * Typed clients of wayfind at `baseUrl` (e.g. "http://127.0.0.1:50051", or "https://…" for a server
 * with TLS), sharing one connection.
 */
export function connectWayfind(baseUrl: string, options: ConnectOptions = {}): WayfindClients {
  const { apiKey, ca } = options;
  const sendKey: Interceptor = (next) => (request) => {
    request.header.set("authorization", `Bearer ${apiKey}`);
    return next(request);
  };
  const settings = {
    baseUrl,
    interceptors: [...(apiKey ? [sendKey] : []), ...(options.interceptors ?? [])],
    ...(ca ? { nodeOptions: { ca: typeof ca === "string" ? ca : Buffer.from(ca) } } : {}),
  };
  const transport =
    options.protocol === "connect"
      ? createConnectTransport({ ...settings, httpVersion: "1.1", useBinaryFormat: true })
      : createGrpcTransport(settings);
  return {
    tools: createClient(ToolDiscoveryService, transport),
    skills: createClient(SkillService, transport),
    usage: createClient(UsageService, transport),
    keys: createClient(KeyService, transport),
  };
}
