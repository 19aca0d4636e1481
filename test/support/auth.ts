import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { apiKeySha256 } from "../../src/auth/index.ts";

/** An API key for a test config: the secret to send and the `auth.api_keys` entry that declares it. */
export function apiKey(
  id: string,
  grant: {
    tenant?: string;
    roles: string[];
    projects?: string[];
    entitlements?: string[];
    expires_at?: string;
  },
) {
  const secret = `wf_test-${id}-${"x".repeat(24)}`;
  return { secret, entry: { id, key_sha256: apiKeySha256(secret), ...grant } };
}

/** Sends `authorization: Bearer <token>` on every call. */
export function bearer(token: string): Interceptor {
  return (next) => (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
}

export type Protocol = "grpc" | "connect" | "grpc-web";

/** A generated client over `protocol` that sends `token` (none when undefined). */
export function clientWith<S extends DescService>(
  service: S,
  baseUrl: string,
  token: string | undefined,
  protocol: Protocol = "grpc",
): Client<S> {
  const interceptors = token === undefined ? [] : [bearer(token)];
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, interceptors })
      : protocol === "connect"
        ? createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors })
        : createGrpcWebTransport({ baseUrl, httpVersion: "2", interceptors });
  return createClient(service, transport);
}
