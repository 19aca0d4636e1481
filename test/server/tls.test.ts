import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey, bearer } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { servedSerial, TLS_FIXTURES } from "../support/tls.ts";

// Issue 15 "TLS": one port for gRPC, Connect and gRPC-Web over TLS (ALPN h2 / http/1.1); SIGHUP reloads.
const FIXTURES = TLS_FIXTURES;
const ca = readFileSync(join(FIXTURES, "ca.pem"));
const key = apiKey("tls-agent", { tenant: "acme", roles: ["agent"] });

let wayfind: TestServer;
let certDir: string;
beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), "wayfind-tls-"));
  copyFileSync(join(FIXTURES, "server.pem"), join(certDir, "cert.pem"));
  copyFileSync(join(FIXTURES, "server-key.pem"), join(certDir, "key.pem"));
  wayfind = await startTestServer({
    server: { tls: { cert_file: join(certDir, "cert.pem"), key_file: join(certDir, "key.pem") } },
    auth: { allow_unauthenticated: false, api_keys: [key.entry] },
  });
});
afterAll(() => wayfind.stop());

const httpsUrl = () => `https://localhost:${wayfind.port}`;
const interceptors = [bearer(key.secret)];

describe("TLS on the one port", () => {
  it("serves native gRPC (ALPN h2) with an API key", async () => {
    const client = createClient(
      ToolDiscoveryService,
      createGrpcTransport({ baseUrl: httpsUrl(), nodeOptions: { ca }, interceptors }),
    );
    await expect(client.listTools({})).resolves.toBeDefined();
  });

  it("serves Connect over HTTP/1.1 (ALPN http/1.1) and gRPC-Web over HTTP/2", async () => {
    const connect = createClient(
      ToolDiscoveryService,
      createConnectTransport({ baseUrl: httpsUrl(), httpVersion: "1.1", nodeOptions: { ca }, interceptors }),
    );
    await expect(connect.listTools({})).resolves.toBeDefined();
    const web = createClient(
      ToolDiscoveryService,
      createGrpcWebTransport({ baseUrl: httpsUrl(), httpVersion: "2", nodeOptions: { ca }, interceptors }),
    );
    await expect(web.listTools({})).resolves.toBeDefined();
  });

  it("refuses a cleartext client, and a client that does not trust the certificate", async () => {
    const cleartext = createClient(
      ToolDiscoveryService,
      createGrpcTransport({ baseUrl: wayfind.baseUrl, interceptors }),
    );
    await failure(cleartext.listTools({}));
    const untrusting = createClient(
      ToolDiscoveryService,
      createGrpcTransport({ baseUrl: httpsUrl(), interceptors }),
    );
    await failure(untrusting.listTools({}));
    // The server still serves everyone else.
    const client = createClient(
      ToolDiscoveryService,
      createGrpcTransport({ baseUrl: httpsUrl(), nodeOptions: { ca }, interceptors }),
    );
    await expect(client.listTools({})).resolves.toBeDefined();
  });

  it("reloads the certificate (SIGHUP) for new connections without dropping open ones", async () => {
    const open = createClient(
      ToolDiscoveryService,
      createGrpcTransport({ baseUrl: httpsUrl(), nodeOptions: { ca }, interceptors }),
    );
    await open.listTools({});
    const before = await servedSerial(wayfind.port);

    copyFileSync(join(FIXTURES, "server-renewed.pem"), join(certDir, "cert.pem"));
    copyFileSync(join(FIXTURES, "server-renewed-key.pem"), join(certDir, "key.pem"));
    wayfind.server.reloadTls();

    expect(await servedSerial(wayfind.port)).not.toBe(before);
    await expect(open.listTools({})).resolves.toBeDefined();
  });

  it("keeps the old certificate when the new files do not load", async () => {
    const serving = await servedSerial(wayfind.port);
    copyFileSync(join(FIXTURES, "server.pem"), join(certDir, "cert.pem")); // key no longer matches
    expect(() => wayfind.server.reloadTls()).toThrow(/do not load as a certificate chain and its key/);
    expect(await servedSerial(wayfind.port)).toBe(serving);
  });
});
