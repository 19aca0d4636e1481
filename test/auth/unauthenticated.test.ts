import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// Issue 15: auth `none` stays for local development, on loopback only unless the operator insists.
let wayfind: TestServer | undefined;
afterEach(async () => {
  await wayfind?.stop();
  wayfind = undefined;
});

describe("calls without credentials", () => {
  it("are served on loopback by default, acting as their CallerContext says (the quick start)", async () => {
    wayfind = await startTestServer({});
    await expect(
      wayfind.grpc(ToolDiscoveryService).listTools({ caller: { tenantId: "acme" } }),
    ).resolves.toBeDefined();
  });

  it("are UNAUTHENTICATED where auth.allow_unauthenticated is false, saying what to send", async () => {
    wayfind = await startTestServer({ auth: { allow_unauthenticated: false } });
    const error = await failure(wayfind.grpc(ToolDiscoveryService).listTools({}));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe(
      "this server requires credentials: send authorization: Bearer <API key or token>",
    );
  });

  it("still have a credential that is sent checked, also where none is needed", async () => {
    wayfind = await startTestServer({});
    const error = await failure(clientWith(ToolDiscoveryService, wayfind.baseUrl, "wf_wrong").listTools({}));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  it("fail the start when allowed explicitly on a host that is not loopback", async () => {
    await expect(
      startTestServer({ server: { host: "0.0.0.0" }, auth: { allow_unauthenticated: true } }),
    ).rejects.toThrow(/server.host 0.0.0.0 is not loopback.*--insecure-allow-unauthenticated/);
  });

  it("are refused, not served, on a host that is not loopback when nothing is said", async () => {
    const key = apiKey("lan", { tenant: "acme", roles: ["agent"] });
    wayfind = await startTestServer({ server: { host: "0.0.0.0" }, auth: { api_keys: [key.entry] } });
    expect((await failure(wayfind.grpc(ToolDiscoveryService).listTools({}))).code).toBe(Code.Unauthenticated);
    await expect(
      clientWith(ToolDiscoveryService, wayfind.baseUrl, key.secret).listTools({}),
    ).resolves.toBeDefined();
  });
});
