import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { CallerContextSchema } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";

/** wayfind's services as the console calls them: Connect over fetch, to the server that served the page. */
export interface Api {
  readonly tools: Client<typeof ToolDiscoveryService>;
  readonly skills: Client<typeof SkillService>;
  readonly usage: Client<typeof UsageService>;
  readonly keys: Client<typeof KeyService>;
}

/**
 * Clients sending `key` as the bearer credential. Without a key (a loopback server that serves calls
 * without credentials) the console asks to be the operator, as `wayfind-role: admin` does for any
 * client there, so it may look at every tenant.
 */
export function connectApi(key: string | undefined, baseUrl = location.origin): Api {
  const credentials: Interceptor = (next) => (request) => {
    if (key) request.header.set("authorization", `Bearer ${key}`);
    else request.header.set("wayfind-role", "admin");
    return next(request);
  };
  // Binary protobuf: a live stream of a thousand events a second decodes several times faster than JSON.
  const transport = createConnectTransport({ baseUrl, interceptors: [credentials], useBinaryFormat: true });
  return {
    tools: createClient(ToolDiscoveryService, transport),
    skills: createClient(SkillService, transport),
    usage: createClient(UsageService, transport),
    keys: createClient(KeyService, transport),
  };
}

/** The CallerContext of a console request made as `tenant` ("" = the credential's own). */
export function callerAs(tenant: string): MessageInitShape<typeof CallerContextSchema> {
  return { tenantId: tenant };
}

/** What to tell a person about a failed call: the server's own message, which says what to fix. */
export function problemOf(error: unknown): string {
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.Unavailable || connectError.code === Code.Unknown)
    return `wayfind is not reachable (${connectError.rawMessage}); retrying`;
  return connectError.rawMessage;
}

export { Code, ConnectError };
