import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { UsageService } from "../../../gen/ts/wayfind/v1/usage_pb.ts";
import { observeRoute, serviceRoutes } from "../../../src/server/transport/rpc.ts";

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

describe("observeRoute", () => {
  /** WatchUsageEvents yielding three events, observed: what the observer was told, in order. */
  function observedWatch() {
    const told: string[] = [];
    const [route] = serviceRoutes(UsageService, {
      recordUsage: () => ({}),
      getUsageSummary: () => ({}),
      watchUsageEvents: async function* () {
        for (let i = 0; i < 3; i++) yield {};
      },
    }).filter((r) => r.kind === "server_streaming");
    if (route?.kind !== "server_streaming") throw new Error("no stream");
    const observed = observeRoute(route, {
      begin: () => ({
        succeeded: () => told.push("succeeded"),
        failed: (error) => {
          told.push(`failed: ${Code[ConnectError.from(error).code]}`);
          return error;
        },
      }),
    });
    if (observed.kind !== "server_streaming") throw new Error("kind lost");
    const context = createHandlerContext({
      service: UsageService,
      method: route.method,
      protocolName: "connect",
      requestMethod: "POST",
      url: "http://localhost/",
    });
    return { told, stream: observed.impl({} as never, context)[Symbol.asyncIterator]() };
  }

  it("tells the observer a stream read to its end succeeded", async () => {
    const { told, stream } = observedWatch();
    while (!(await stream.next()).done);
    expect(told).toEqual(["succeeded"]);
  });

  it("ends a stream whose reader stops early as cancelled, exactly once (it never ended: its stream slot and credential watch stayed held)", async () => {
    const { told, stream } = observedWatch();
    await stream.next();
    await stream.return?.();
    expect(told).toEqual(["failed: Canceled"]);
  });
});
