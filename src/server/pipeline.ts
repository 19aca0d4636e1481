import { type ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { CallerContext } from "../../gen/ts/wayfind/v1/common_pb.ts";
import {
  type Authenticator,
  admitCall,
  type CredentialWatch,
  METHOD_ROLES,
  type PrincipalLimits,
} from "../auth/index.ts";
import { ANONYMOUS_CALLER, ANONYMOUS_PRINCIPAL, type Caller, type Principal } from "../caller/caller.ts";
import { errorReason, RetryLaterError } from "../errors.ts";
import { type CallObserver, type MethodRoute, methodPath, observeRoute } from "./transport/rpc.ts";
import { codeName, toRpcError } from "./transport/rpc-errors.ts";

/** The caller, resolved once per call from the request's `caller` field and bound to its credentials. */
const callerKey = createContextKey<Caller>(ANONYMOUS_CALLER, { description: "wayfind caller" });

export function callerOf(context: HandlerContext): Caller {
  return context.values.get(callerKey);
}

/**
 * Aborted when the call should stop: its client went away, or (a stream) its credential was revoked
 * or expired. Long-running handlers (the watch streams) stop on this rather than `context.signal`.
 */
const callSignalKey = createContextKey<AbortSignal | undefined>(undefined, {
  description: "wayfind call signal",
});

export function callSignal(context: HandlerContext): AbortSignal {
  return context.values.get(callSignalKey) ?? context.signal;
}

/** Who acts, resolved once per call next to the caller; what it may do is src/caller/authorize.ts. */
const principalKey = createContextKey<Principal>(ANONYMOUS_PRINCIPAL, {
  description: "wayfind principal",
});

export function principalOf(context: HandlerContext): Principal {
  return context.values.get(principalKey);
}

/** How calls are authenticated and admitted (src/auth); absent for public routes (health, reflection). */
interface CallAuth {
  readonly authenticator: Authenticator;
  readonly limits: PrincipalLimits;
  /** Ends streams whose credential is revoked or expires while they are open. */
  readonly credentials: CredentialWatch;
  /** A call refused for its credentials, role, tenant or limits (a metric counts these). */
  readonly onDenied?: (method: string, code: string) => void;
}

export interface PipelineOptions {
  /** Level of a successful call's line: probes (health, reflection) log at debug, to keep the log readable. */
  readonly level?: "info" | "debug";
  readonly auth?: CallAuth;
  /**
   * Awaited before every call once it is admitted: a replica's fence (src/replication), so a call sees
   * every write acknowledged anywhere before it started. False = the shared database is away and the
   * call is answered from the replica's copy: the response says so (`wayfind-stale: true`).
   */
  readonly fence?: () => Promise<boolean>;
}

/** A replica's read fence (Replica.fence): true once its copy holds every change committed before. */
type Fence = () => Promise<boolean>;

/**
 * Wraps every route once, whatever transport serves it: authenticates the call and admits it (role,
 * tenant binding, limits: src/auth), sets its caller and principal, and logs one line per call
 * (method, code, duration, tenant, principal), plus an audit line for every refused one. The
 * transport maps what a call throws (rpc-errors.ts).
 */
export function withCallPipeline(
  routes: readonly MethodRoute[],
  logger: Logger,
  options: PipelineOptions = {},
): MethodRoute[] {
  return routes.map((route) => observeRoute(route, callLog(route, logger, options)));
}

const DENIED_CODES = new Set(["unauthenticated", "permission_denied"]);
/** Set on a replica's answers served from its local copy while the shared database is away. */
const STALE_HEADER = "wayfind-stale";

function callLog(route: MethodRoute, logger: Logger, options: PipelineOptions): CallObserver {
  const method = methodPath(route.method);
  const level = options.level ?? "info";
  const { auth, fence } = options;
  const streaming = route.kind === "server_streaming" || route.kind === "bidi_streaming";
  return {
    begin(input, context) {
      const claimed = resolveCaller(input);
      let caller = claimed;
      let principal: Principal | undefined;
      let releaseStream: (() => void) | undefined;
      let releaseWatch: (() => void) | undefined;
      /** A stream's: aborted with the UNAUTHENTICATED error once its credential is revoked or expires. */
      let credentialLost: AbortController | undefined;
      const admit = (who: Principal) => {
        principal = who;
        auth?.limits.admitCall(who.id);
        const admission = admitCall(method, who, claimed);
        if (streaming && auth) {
          releaseStream = auth.limits.openStream(who.id);
          const lost = new AbortController();
          credentialLost = lost;
          releaseWatch = auth.credentials.watch(context.requestHeader, claimed, who, (error) =>
            lost.abort(error),
          );
          context.values.set(callSignalKey, AbortSignal.any([context.signal, lost.signal]));
        }
        caller = { ...admission.caller, actor: admission.principal.id };
        context.values.set(callerKey, caller);
        context.values.set(principalKey, admission.principal);
      };
      if (!auth) context.values.set(callerKey, claimed);
      const started = performance.now();
      const finish = (error?: unknown) => {
        releaseStream?.();
        releaseWatch?.();
        const code = error === undefined ? "ok" : codeName(error);
        const fields = {
          method,
          protocol: context.protocolName,
          code,
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
          tenant: caller.tenantId || undefined,
          principal: principal?.id,
          // Operator calls stand out in the log.
          operator: principal?.operator || undefined,
        };
        if (code === "internal" || code === "unknown") logger.error({ ...fields, err: error }, "call failed");
        else if (auth && (DENIED_CODES.has(code) || error instanceof RetryLaterError)) {
          // The audit trail of refusals: who, what, why; never a credential (messages never hold one).
          logger.warn({ ...fields, reason: errorReason(error) }, "call denied");
          auth.onDenied?.(method, code);
        } else logger[level](fields, "call");
      };
      const authenticate = auth
        ? () => {
            const who = auth.authenticator.authenticate(context.requestHeader, claimed);
            return who instanceof Promise ? who.then(admit) : admit(who);
          }
        : undefined;
      return {
        // A replica fences first: a key created or revoked on another replica before this call
        // started is in its copy when the call is authenticated.
        prepare: fence
          ? async () => {
              if (!(await fence())) context.responseHeader.set(STALE_HEADER, "true");
              await authenticate?.();
            }
          : authenticate,
        settle() {
          if (credentialLost?.signal.aborted) throw credentialLost.signal.reason;
        },
        // A revocation committed before a message goes out ends the stream instead (not a check
        // interval later): nothing reaches a caller after its credential stopped being accepted.
        beforeMessage() {
          if (credentialLost === undefined) return;
          auth?.credentials.checkNow();
          if (credentialLost.signal.aborted) throw credentialLost.signal.reason;
        },
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
 * The check the request gate runs on an RPC's headers before reading its body: the credentials
 * refused outright (missing where needed, an unknown, revoked or expired key) are answered then,
 * with the audit line and count every refused call gets. What takes longer to judge (a JWT not
 * verified before) and public routes are left to the call. On a replica an API key is judged after
 * the read fence when its copy refuses it (it may have been created elsewhere a moment ago): the
 * answer is then a promise, and the body still waits unread.
 */
export function credentialsBeforeBody(
  auth: CallAuth,
  logger: Logger,
  fence?: Fence,
): (path: string, headers: Headers) => ConnectError | undefined | Promise<ConnectError | undefined> {
  const judge = (path: string, headers: Headers): ConnectError | undefined => {
    let who: ReturnType<Authenticator["authenticate"]>;
    try {
      who = auth.authenticator.authenticate(headers, ANONYMOUS_CALLER);
    } catch (error) {
      logger.warn(
        { method: path, code: codeName(error), reason: errorReason(error), body: "unread" },
        "call denied",
      );
      auth.onDenied?.(path, codeName(error));
      return toRpcError(error);
    }
    // Verified by the call itself, from the cache this fills.
    if (who instanceof Promise) who.catch(() => undefined);
    return undefined;
  };
  return (path, headers) => {
    if (METHOD_ROLES[path] === undefined) return undefined;
    if (fence && auth.authenticator.refusalMayBeStale(headers) && refusedNow(auth, headers))
      return fence().then(() => judge(path, headers));
    return judge(path, headers);
  };
}

/** Whether the credentials are refused by the copy as it is (nothing is logged or counted). */
function refusedNow(auth: CallAuth, headers: Headers): boolean {
  try {
    const who = auth.authenticator.authenticate(headers, ANONYMOUS_CALLER);
    if (who instanceof Promise) who.catch(() => undefined);
    return false;
  } catch {
    return true;
  }
}
