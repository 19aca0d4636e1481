import { describe, expect, it } from "vitest";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { serviceRoutes } from "../../src/server/rpc.ts";

describe("serviceRoutes", () => {
  it("needs a handler for every RPC of the service, checked by the compiler", () => {
    const recordUsage = () => ({ duplicate: false });
    // @ts-expect-error getUsageSummary and watchUsageEvents have no handler: tsc refuses it.
    const routes = () => serviceRoutes(UsageService, { recordUsage });
    expect(routes().map((route) => route.method.name)).toEqual([
      "RecordUsage",
      "GetUsageSummary",
      "WatchUsageEvents",
    ]);
  });

  it("keeps each method's kind next to its implementation", () => {
    const routes = serviceRoutes(UsageService, {
      recordUsage: () => ({}),
      getUsageSummary: () => ({}),
      watchUsageEvents: async function* () {},
    });
    expect(routes.map((route) => [route.method.name, route.kind])).toEqual([
      ["RecordUsage", "unary"],
      ["GetUsageSummary", "unary"],
      ["WatchUsageEvents", "server_streaming"],
    ]);
  });
});
