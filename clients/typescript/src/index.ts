/**
 * The wayfind TypeScript client: the generated messages and service descriptors (gen/ts, from
 * proto/), and `connectWayfind`, which opens typed clients of the three services over native gRPC
 * (HTTP/2, what agents use) or the Connect protocol (HTTP/1.1, through proxies that lack HTTP/2).
 */
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { SkillService } from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../../gen/ts/wayfind/v1/usage_pb.ts";

export * from "../../../gen/ts/wayfind/v1/common_pb.ts";
export * from "../../../gen/ts/wayfind/v1/events_pb.ts";
export * from "../../../gen/ts/wayfind/v1/skills_pb.ts";
export * from "../../../gen/ts/wayfind/v1/tools_pb.ts";
export * from "../../../gen/ts/wayfind/v1/usage_pb.ts";

export interface WayfindClients {
  readonly tools: Client<typeof ToolDiscoveryService>;
  readonly skills: Client<typeof SkillService>;
  readonly usage: Client<typeof UsageService>;
}

export interface ConnectOptions {
  /** "grpc" (default: native gRPC over HTTP/2) or "connect" (Connect binary over HTTP/1.1). */
  readonly protocol?: "grpc" | "connect";
  /** e.g. to add metadata such as `authorization` to every call. */
  readonly interceptors?: Interceptor[];
}

/** Typed clients of wayfind at `baseUrl` (e.g. "http://127.0.0.1:50051"), sharing one connection. */
export function connectWayfind(baseUrl: string, options: ConnectOptions = {}): WayfindClients {
  const settings = { baseUrl, interceptors: options.interceptors ?? [] };
  const transport =
    options.protocol === "connect"
      ? createConnectTransport({ ...settings, httpVersion: "1.1", useBinaryFormat: true })
      : createGrpcTransport(settings);
  return {
    tools: createClient(ToolDiscoveryService, transport),
    skills: createClient(SkillService, transport),
    usage: createClient(UsageService, transport),
  };
}
