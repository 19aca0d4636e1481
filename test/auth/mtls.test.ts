import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Code, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { TLS_FIXTURES } from "../support/tls.ts";

// Issue 15 "mTLS": client certificates verified against a configured CA; the SAN URI names the principal.
const FIXTURES = TLS_FIXTURES;
const pem = (name: string) => readFileSync(join(FIXTURES, `${name}.pem`));
const ca = pem("ca");

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    server: {
      tls: { cert_file: join(FIXTURES, "server.pem"), key_file: join(FIXTURES, "server-key.pem") },
    },
    auth: {
      allow_unauthenticated: false,
      mtls: {
        client_ca: join(FIXTURES, "ca.pem"),
        principal_from: "san_uri",
        principals: { "spiffe://acme/agent-1": { tenant: "acme", roles: ["agent"] } },
      },
    },
  });
});
afterAll(() => wayfind.stop());

function tools(
  client: string | undefined,
  protocol: "grpc" | "connect" = "grpc",
  headers: Record<string, string> = {},
) {
  const nodeOptions = client ? { ca, cert: pem(client), key: pem(`${client}-key`) } : { ca };
  const baseUrl = `https://localhost:${wayfind.port}`;
  const sendHeaders: Interceptor = (next) => (request) => {
    for (const [name, value] of Object.entries(headers)) request.header.set(name, value);
    return next(request);
  };
  const interceptors = [sendHeaders];
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, nodeOptions, interceptors })
      : createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions, interceptors });
  return createClient(ToolDiscoveryService, transport);
}

describe("client certificates", () => {
  it.each(["grpc", "connect"] as const)(
    "%s: a mapped certificate acts as its principal's tenant",
    async (protocol) => {
      await expect(tools("client-agent", protocol).listTools({})).resolves.toBeDefined();
      const error = await failure(
        tools("client-agent", protocol).listTools({ caller: { tenantId: "globex" } }),
      );
      expect(error.code).toBe(Code.PermissionDenied);
    },
  );

  it("refuses a verified certificate whose name is not mapped", async () => {
    const error = await failure(tools("client-unmapped").listTools({}));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain("SAN URI is not one of auth.mtls.principals");
  });

  it("treats a certificate from another CA as no credential", async () => {
    const error = await failure(tools("client-untrusted").listTools({}));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain(
      "send authorization: Bearer <API key or token> or a client certificate",
    );
  });

  it("cannot be forged with the header the transport uses to pass the certificate on", async () => {
    const forged = encodeURIComponent(JSON.stringify({ cn: "agent-1", uris: ["spiffe://acme/agent-1"] }));
    for (const protocol of ["grpc", "connect"] as const) {
      const error = await failure(
        tools(undefined, protocol, { "wayfind-client-certificate": forged }).listTools({}),
      );
      expect(error.code).toBe(Code.Unauthenticated);
    }
  });
});
