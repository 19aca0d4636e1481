import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { CallerContext } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { OPERATOR_ROLE, ROLE_HEADER } from "../caller/authorize.ts";
import { ANONYMOUS_CALLER, ANONYMOUS_PRINCIPAL, type Caller, type Principal } from "../caller/caller.ts";
import { type CallObserver, type MethodRoute, methodPath, observeRoute } from "./rpc.ts";
import { codeName } from "./rpc-errors.ts";

/** The caller, resolved once per call from the request's `caller` field (docs/design.md §3). */
const callerKey = createContextKey<Caller>(ANONYMOUS_CALLER, { description: "wayfind caller" });

export function callerOf(context: HandlerContext): Caller {
  return context.values.get(callerKey);
}

/** Who acts, resolved once per call next to the caller; what it may do is src/caller/authorize.ts. */
const principalKey = createContextKey<Principal>(ANONYMOUS_PRINCIPAL, {
  description: "wayfind principal",
});

export function principalOf(context: HandlerContext): Principal {
  return context.values.get(principalKey);
}

/**
 * Wraps every route once, whatever transport serves it: resolves the caller and the principal and
 * logs one line per call (method, code, duration, tenant, operator). The transport maps what a call
 * throws (rpc-errors.ts).
 */
export function withCallPipeline(
  routes: readonly MethodRoute[],
  logger: Logger,
  /** Level of a successful call's line: probes (health, reflection) log at debug, to keep the log readable. */
  level: "info" | "debug" = "info",
): MethodRoute[] {
  return routes.map((route) => observeRoute(route, callLog(route, logger, level)));
}

function callLog(route: MethodRoute, logger: Logger, level: "info" | "debug"): CallObserver {
  const method = methodPath(route.method);
  return {
    begin(input, context) {
      const caller = resolveCaller(input);
      context.values.set(callerKey, caller);
      const principal = resolvePrincipal(caller, context.requestHeader);
      context.values.set(principalKey, principal);
      const started = performance.now();
      const finish = (error?: unknown) => {
        const code = error === undefined ? "ok" : codeName(error);
        const fields = {
          method,
          protocol: context.protocolName,
          code,
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
          tenant: caller.tenantId || undefined,
          // Operator calls stand out in the log (an audit trail until issue 15 adds one).
          operator: principal.operator || undefined,
        };
        if (code === "internal" || code === "unknown") logger.error({ ...fields, err: error }, "call failed");
        else logger[level](fields, "call");
      };
      return {
        succeeded: () => finish(),
        failed(error) {
          finish(error);
          return error;
        },
      };
    },
  };
}

function resolveCaller(input: unknown): Caller {
  const context = (input as { caller?: CallerContext } | null)?.caller;
  if (!context || typeof context !== "object") return ANONYMOUS_CALLER;
  return {
    tenantId: context.tenantId,
    projectId: context.projectId,
    userId: context.userId,
    sessionId: context.sessionId,
    runId: context.runId,
    entitlements: context.entitlements,
    narrowToTools: context.narrowToTools,
  };
}

/**
 * The one place a principal comes from. Like the CallerContext, the role header is trusted as sent
 * (a gateway in front must strip it from untrusted callers); issue 15 replaces this with credentials.
 */
function resolvePrincipal(caller: Caller, headers: Headers): Principal {
  return { tenantId: caller.tenantId, operator: headers.get(ROLE_HEADER)?.trim() === OPERATOR_ROLE };
}
