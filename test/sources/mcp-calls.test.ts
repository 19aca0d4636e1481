import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";
import { type HttpMcpServer, startHttpMcpServer } from "./mcp-servers.ts";

/**
 * Each tenant calls an MCP server with its own credentials, read from the environment or a file,
 * on a session of its own; a tenant the server has none for is told so, and no secret is ever shown.
 */

const ACME_TOKEN = "Bearer acme-secret-token";
const BRAVO_TOKEN = "Bearer bravo-secret-token";

let upstream: HttpMcpServer;
let wayfind: RouterTestServer;
beforeAll(async () => {
  upstream = await startHttpMcpServer([
    {
      name: "whoami",
      description: "Say which credential the call carried.",
      run: async (_, { authorization }) => ({
        content: [{ type: "text", text: `seen: ${authorization || "none"}` }],
      }),
    },
  ]);
  const dir = mkdtempSync(join(tmpdir(), "wayfind-tenant-credentials-"));
  writeFileSync(join(dir, "bravo-token"), `${BRAVO_TOKEN}\n`);
  process.env.WAYFIND_TEST_ACME_TOKEN = ACME_TOKEN;
  wayfind = await startRouterServer(
    {
      mcp_servers: [
        {
          name: "gh",
          transport: "http",
          url: upstream.url,
          tenant_credentials: {
            acme: { headers: { authorization: { env: "WAYFIND_TEST_ACME_TOKEN" } } },
            bravo: { headers: { authorization: { file: "bravo-token" } } },
            delta: { headers: { authorization: { env: "WAYFIND_TEST_UNSET_TOKEN" } } },
          },
          require_tenant_credentials: true,
        },
      ],
    },
    { dataDir: dir },
  );
});
afterAll(async () => {
  await wayfind.stop();
  await upstream.close();
  delete process.env.WAYFIND_TEST_ACME_TOKEN;
});

const call = (tenantId: string) =>
  wayfind.grpc(ToolDiscoveryService).callTool({
    caller: { tenantId, sessionId: "s", runId: "r" },
    name: "gh.whoami",
    arguments: { text: "?" },
  });

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("the call succeeded");
}

describe("per-tenant credentials", () => {
  it("sends each tenant's own credential, from the environment or from a file", async () => {
    expect((await call("acme")).content).toEqual([{ type: "text", text: `seen: ${ACME_TOKEN}` }]);
    expect((await call("bravo")).content).toEqual([{ type: "text", text: `seen: ${BRAVO_TOKEN}` }]);
  });

  it("tells a tenant without credentials for the server that it has none (FAILED_PRECONDITION)", async () => {
    const error = await failure(call("charlie"));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toContain("has no credentials for your tenant");
  });

  it("names a credential that cannot be read without showing any secret", async () => {
    const error = await failure(call("delta"));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).toContain("WAYFIND_TEST_UNSET_TOKEN");
    expect(error.rawMessage).not.toContain("secret-token");
  });
});

describe("an upstream that fails (issue 42: its stderr, with the tenant's credential, was in the tool error)", () => {
  const LEAKY_TOKEN = "acme-leaky-credential-7f3a";
  /** A stdio MCP server that prints the credential it was started with, then dies, on every call. */
  const LEAKY_SERVER = `
    import { Server } from "@modelcontextprotocol/sdk/server/index.js";
    import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
    import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
    const server = new Server({ name: "leaky", version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: "crash", description: "Crash on every call.", inputSchema: { type: "object" } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async () => {
      console.error("debug: calling the API with token=" + process.env.LEAKY_TOKEN);
      process.exit(1);
    });
    await server.connect(new StdioServerTransport());
  `;
  const lines: Record<string, unknown>[] = [];
  let leaky: RouterTestServer;
  beforeAll(async () => {
    process.env.WAYFIND_TEST_LEAKY_TOKEN = LEAKY_TOKEN;
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    leaky = await startRouterServer(
      {
        mcp_servers: [
          {
            name: "leaky",
            transport: "stdio",
            command: process.execPath,
            args: ["--input-type=module", "-e", LEAKY_SERVER],
            tenant_credentials: { acme: { env: { LEAKY_TOKEN: { env: "WAYFIND_TEST_LEAKY_TOKEN" } } } },
          },
        ],
      },
      { logger },
    );
  });
  afterAll(async () => {
    await leaky.stop();
    delete process.env.WAYFIND_TEST_LEAKY_TOKEN;
  });

  it("answers the caller UNAVAILABLE without its stderr, and keeps the stderr, redacted, in the log", async () => {
    const error = await failure(
      leaky
        .grpc(ToolDiscoveryService)
        .callTool({ caller: { tenantId: "acme", sessionId: "s", runId: "r" }, name: "leaky.crash" }),
    );
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).not.toContain(LEAKY_TOKEN);
    expect(error.rawMessage).not.toContain("debug: calling");
    expect(error.rawMessage).toContain("its stderr is in wayfind's log");
    const logged = lines.find((line) => line.msg === "mcp server failed a call");
    expect(logged).toMatchObject({ source: "mcp:leaky", tenant: "acme", request: 'the call of "crash"' });
    expect(String(logged?.stderr)).toContain("debug: calling the API with token=[redacted]");
    expect(JSON.stringify(lines)).not.toContain(LEAKY_TOKEN);
  });
});
