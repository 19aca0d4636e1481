import { EventEmitter, on } from "node:events";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.ts";
import { quoteInput } from "../errors.ts";
import { type MethodRoute, serviceRoutes } from "./transport/rpc.ts";

/**
 * `grpc.health.v1.Health`: the server ("") and every wayfind service report SERVING until the
 * server starts draining, then NOT_SERVING, so load balancers stop sending new calls first.
 */
export class HealthStatus {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly changes = new EventEmitter();

  constructor(serviceNames: readonly string[]) {
    for (const name of ["", ...serviceNames]) this.statuses.set(name, ServingStatus.SERVING);
    this.changes.setMaxListeners(0);
  }

  /** Sets (or adds) one service's status; watchers of it are told. */
  set(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    this.changes.emit("change", service);
  }

  setAll(status: ServingStatus): void {
    for (const name of this.statuses.keys()) {
      this.statuses.set(name, status);
      this.changes.emit("change", name);
    }
  }

  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  all(): ReadonlyMap<string, ServingStatus> {
    return this.statuses;
  }

  routes(): MethodRoute[] {
    return serviceRoutes(Health, {
      check: ({ service }) => {
        const status = this.get(service);
        if (status === undefined)
          throw new ConnectError(`unknown service ${quoteInput(service)}`, Code.NotFound);
        return { status };
      },
      list: () => ({
        statuses: Object.fromEntries([...this.all()].map(([name, status]) => [name, { status }])),
      }),
      watch: (request, context) => this.watchStatus(request, context),
    });
  }

  private async *watchStatus({ service }: HealthCheckRequest, context: HandlerContext) {
    let last = this.get(service) ?? ServingStatus.SERVICE_UNKNOWN;
    yield { status: last };
    try {
      for await (const [changed] of on(this.changes, "change", { signal: context.signal })) {
        const current = this.get(service) ?? ServingStatus.SERVICE_UNKNOWN;
        if (changed === service && current !== last) {
          last = current;
          yield { status: current };
        }
      }
    } catch (error) {
      // The call ended (client gone or server drained): a watch simply stops.
      if (!context.signal.aborted) throw error;
    }
  }
}
