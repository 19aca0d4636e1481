import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { CallerContext } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { OPERATOR_ROLE, ROLE_HEADER } from "../caller/authorize.ts";
import { ANONYMOUS_CALLER, ANONYMOUS_PRINCIPAL, type Caller, type Principal } from "../caller/caller.ts";
import { type ErrorCode, WayfindError } from "../errors.ts";
import { type AnyMethodImpl, type MethodRoute, methodPath } from "./rpc.ts";

/** The caller, resolved once per call from the request's `caller` field (DESIGN.md §3). */
export const callerKey = createContextKey<Caller>(ANONYMOUS_CALLER, { description: "wayfind caller" });

export function callerOf(context: HandlerContext): Caller {
  return context.values.get(callerKey);
}

/** Who acts, resolved once per call next to the caller; what it may do is src/caller/authorize.ts. */
export const principalKey = createContextKey<Principal>(ANONYMOUS_PRINCIPAL, {
  description: "wayfind principal",
});

export function principalOf(context: HandlerContext): Principal {
  return context.values.get(principalKey);
}

/**
 * Wraps every route once, whatever transport serves it: resolves the caller and the principal, maps
 * domain errors to RPC codes (never leaking internals), and logs one line per call (method, code,
 * duration, tenant, operator).
 */
export function withCallPipeline(routes: readonly MethodRoute[], logger: Logger): MethodRoute[] {
  return routes.map((route) => ({ ...route, impl: wrap(route, logger) }));
}

function wrap(route: MethodRoute, logger: Logger): AnyMethodImpl {
  const method = methodPath(route.method);
  const streamingResponse =
    route.method.methodKind === "server_streaming" || route.method.methodKind === "bidi_streaming";

  const begin = (input: unknown, context: HandlerContext) => {
    const caller = resolveCaller(input);
    context.values.set(callerKey, caller);
    const principal = resolvePrincipal(caller, context.requestHeader);
    context.values.set(principalKey, principal);
    const started = performance.now();
    return (error?: unknown) => {
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
      else logger.info(fields, "call");
    };
  };

  if (!streamingResponse) {
    return async (input, context) => {
      const finish = begin(input, context);
      try {
        const output = await route.impl(input, context);
        finish();
        return output;
      } catch (error) {
        finish(error);
        throw toConnectError(error);
      }
    };
  }
  return (input, context) => {
    const finish = begin(input, context);
    return (async function* () {
      try {
        yield* route.impl(input, context) as AsyncIterable<unknown>;
        finish();
      } catch (error) {
        finish(error);
        throw toConnectError(error);
      }
    })();
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

const CODES: Record<ErrorCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unimplemented: Code.Unimplemented,
  unavailable: Code.Unavailable,
  internal: Code.Internal,
};

export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof WayfindError) {
    const message =
      error.details.length > 0 ? `${error.message}\n- ${error.details.join("\n- ")}` : error.message;
    return new ConnectError(message, CODES[error.code]);
  }
  // Unexpected errors are logged in full but answered without internals.
  return new ConnectError("internal error; the server log has the details", Code.Internal);
}

function codeName(error: unknown): string {
  if (error instanceof WayfindError) return error.code;
  if (error instanceof ConnectError)
    return Code[error.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
  return "internal";
}
