// The script of a web page on another origin than wayfind's (bundled by test/console/cors.test.ts):
// a browser app calling wayfind with @connectrpc/connect-web, as any team's own page would.
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { EventType } from "../../gen/ts/wayfind/v1/events_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";

interface PageGlobals {
  location: { search: string };
  wayfind?: unknown;
}
const page = globalThis as unknown as PageGlobals;
const params = new URLSearchParams(page.location.search);
const baseUrl = params.get("wayfind") ?? "";
const transport =
  params.get("protocol") === "grpc-web"
    ? createGrpcWebTransport({ baseUrl })
    : createConnectTransport({ baseUrl });
const tools = createClient(ToolDiscoveryService, transport);
const caller = { tenantId: "acme" };

page.wayfind = {
  /** Unary: the names a search finds. */
  search: async (query: string) =>
    (await tools.searchTools({ caller, query })).tools.map((tool) => tool.name),
  /** Server streaming: the tools of the first `count` activations retained. */
  activations: async (count: number) => {
    const seen: string[] = [];
    const filter = { fromOldest: true, eventTypes: [EventType.TOOL_ACTIVATED] };
    for await (const message of tools.watchToolEvents({ caller, filter })) {
      if (message.message.case !== "event" || message.message.value.payload.case !== "toolActivated")
        continue;
      seen.push(message.message.value.payload.value.tool);
      // Leaving the loop cancels the stream.
      if (seen.length === count) break;
    }
    return seen;
  },
  /** A call the server refuses: what the page can read of the error. */
  refused: async () => {
    try {
      await tools.getTools({ caller, names: [] });
      return undefined;
    } catch (error) {
      const problem = ConnectError.from(error);
      return { code: problem.code, message: problem.rawMessage };
    }
  },
};
