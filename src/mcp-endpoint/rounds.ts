/**
 * Multi-round-trip requests (MRTR) of the 2026-07-28 revision, for a call whose MCP server behind
 * wayfind asks the client something on the way (sampling, elicitation, roots: docs/mcp.md "Questions
 * over rounds"). A 2026 client holds no session to be asked on, so the call goes on in this process
 * while the client is answered `input_required` with what the server asked; its retry carries the
 * answers and the signed `requestState`, and gets the next round: the call's result, or the next
 * questions. A call that may be asked talks to its server on a connection of its own (as a 2025
 * session that declared what it answers does): one of its principal's lanes, each serving one call at
 * a time, kept a while for the next call of the same principal and capabilities (a stdio server's
 * process is not started anew for every call).
 *
 * Bounds: a call waits for its client's next round at most `roundTimeoutMs`, asks at most `maxRounds`
 * times, and a tenant holds at most `maxPerTenant` waiting calls (all tenants: `maxPending`). The
 * state is bound to the call, its tenant and its principal, and to its round: tampered, replayed,
 * another caller's, or of a call that ended, it is refused, in the same words whichever it was.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import type { JsonObject } from "../json.ts";
import {
  CLIENT_METHODS,
  type ClientAnswers,
  JsonRpcRefusal,
  type PassedMessage,
  type SessionClient,
} from "../tools/mcp-session.ts";

export interface RoundLimits {
  readonly roundTimeoutMs: number;
  readonly maxRounds: number;
  readonly maxPending: number;
  readonly maxPerTenant: number;
  /** Lanes kept idle for a principal's next calls, by capabilities declared. */
  readonly idleLanes: number;
  /** How long an idle lane is kept (its connections count toward the tenant's own connections). */
  readonly laneIdleMs: number;
}

export const DEFAULT_ROUND_LIMITS: RoundLimits = {
  roundTimeoutMs: 300_000,
  maxRounds: 16,
  maxPending: 1_000,
  maxPerTenant: 100,
  idleLanes: 2,
  laneIdleMs: 60_000,
};

/** What a call is, for its state to be bound to: who makes it, and which call it is. */
export interface RoundTarget {
  readonly tenant: string;
  readonly principal: string;
  readonly method: string;
  /** The tool's or prompt's name, the resource's URI. */
  readonly name: string;
}

/** An answer of a round: the call's own result, or `input_required` with what the server asked. */
export type RoundAnswer = JsonObject;

interface Ask {
  readonly key: string;
  readonly request: PassedMessage;
  resolve(result: JsonObject): void;
  reject(error: unknown): void;
}

/** A call that goes on across rounds. */
interface Continuation {
  readonly id: string;
  readonly target: RoundTarget;
  readonly lane: Lane;
  readonly client: Questions;
  readonly work: Promise<JsonObject>;
  readonly stop: AbortController;
  round: number;
  timer: NodeJS.Timeout | undefined;
}

/** What a call is given to run: the client its servers ask, and the signal that ends it. */
export type RoundRun = (client: SessionClient, signal: AbortSignal) => Promise<JsonObject>;

export class Rounds {
  private readonly waiting = new Map<string, Continuation>();
  /** Idle lanes by principal and capabilities declared. */
  private readonly idle = new Map<string, Lane[]>();
  /** Signs states: known to this process alone, as the calls they name are. */
  private readonly key = randomBytes(32);
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly limits: RoundLimits,
    /** Closes what a call opened of its own (its connections to the servers) once it ends. */
    private readonly ended: (clientId: string) => Promise<void>,
  ) {
    this.sweep = setInterval(
      () => this.closeIdleLanes(Date.now() - limits.laneIdleMs),
      limits.laneIdleMs / 4,
    );
    this.sweep.unref();
  }

  /** Runs a call whose client declared `answers`: its result, or the first round's questions. */
  async start(target: RoundTarget, answers: ClientAnswers, run: RoundRun): Promise<RoundAnswer> {
    const stop = new AbortController();
    const laneKey = JSON.stringify([target.tenant, target.principal, Object.keys(answers).sort()]);
    const lane = this.idle.get(laneKey)?.pop() ?? new Lane(laneKey, target.tenant, answers);
    const client = new Questions(this.limits.maxRounds);
    lane.current = client;
    const continuation: Continuation = {
      id: randomUUID(),
      target,
      lane,
      client,
      work: run(lane, stop.signal),
      stop,
      round: 0,
      timer: undefined,
    };
    // Its failure is answered by a round; never left unhandled meanwhile.
    continuation.work.catch(() => undefined);
    return this.next(continuation);
  }

  /** A retry with `state` and the client's `responses`: the call's next round. */
  async resume(state: string, target: RoundTarget, responses: Record<string, unknown>): Promise<RoundAnswer> {
    const continuation = this.verified(state, target);
    clearTimeout(continuation.timer);
    this.waiting.delete(continuation.id);
    continuation.client.answer(responses);
    return this.next(continuation);
  }

  close(): void {
    clearInterval(this.sweep);
    for (const continuation of this.waiting.values()) this.finish(continuation);
    this.closeIdleLanes(Number.POSITIVE_INFINITY);
  }

  /** Closes the lanes idle since before `beforeMs`, their connections with them. */
  private closeIdleLanes(beforeMs: number): void {
    for (const [key, lanes] of this.idle) {
      const kept = lanes.filter((lane) => lane.idleSinceMs >= beforeMs);
      for (const lane of lanes)
        if (!kept.includes(lane)) void this.ended(lane.sessionId).catch(() => undefined);
      if (kept.length === 0) this.idle.delete(key);
      else this.idle.set(key, kept);
    }
  }

  /** Waits for the call to end or ask; a question keeps it waiting for the client's next round. */
  private async next(continuation: Continuation): Promise<RoundAnswer> {
    const outcome = await continuation.client.next(continuation.work);
    if (outcome.kind !== "input") {
      this.finish(continuation);
      if (outcome.kind === "failed") throw outcome.error;
      return outcome.result;
    }
    const tenantWaiting = [...this.waiting.values()].filter(
      (c) => c.target.tenant === continuation.target.tenant,
    );
    if (this.waiting.size >= this.limits.maxPending || tenantWaiting.length >= this.limits.maxPerTenant) {
      this.finish(continuation);
      throw new JsonRpcRefusal(
        ErrorCode.InvalidRequest,
        `${this.limits.maxPerTenant} calls of your tenant (or ${this.limits.maxPending} in all) are waiting for their ` +
          "client's answers, the most wayfind holds; answer or abandon one, then call again",
      );
    }
    continuation.round++;
    continuation.timer = setTimeout(() => {
      this.waiting.delete(continuation.id);
      this.finish(continuation);
    }, this.limits.roundTimeoutMs);
    continuation.timer.unref();
    this.waiting.set(continuation.id, continuation);
    return {
      resultType: "input_required",
      inputRequests: Object.fromEntries(
        outcome.asks.map((ask) => [
          ask.key,
          { method: ask.request.method, params: ask.request.params ?? {} },
        ]),
      ),
      requestState: this.sign(continuation),
    };
  }

  /**
   * Ends a call: what it still waits for is refused, its signal aborted; its lane kept for the
   * principal's next call, or closed (its connections with it) past the idle lanes kept.
   */
  private finish(continuation: Continuation): void {
    clearTimeout(continuation.timer);
    continuation.client.end();
    continuation.stop.abort(
      new JsonRpcRefusal(ErrorCode.InvalidRequest, "the client did not come back for the call's next round"),
    );
    const { lane } = continuation;
    lane.current = undefined;
    lane.idleSinceMs = Date.now();
    const idle = this.idle.get(lane.key) ?? [];
    if (idle.length < this.limits.idleLanes) this.idle.set(lane.key, [...idle, lane]);
    else void this.ended(lane.sessionId).catch(() => undefined);
  }

  private sign(continuation: Continuation): string {
    const payload = Buffer.from(
      JSON.stringify({ id: continuation.id, round: continuation.round, ...continuation.target }),
    ).toString("base64url");
    return `${payload}.${this.mac(payload)}`;
  }

  /** The waiting call `state` names, for this very target and round; refused in one set of words otherwise. */
  private verified(state: string, target: RoundTarget): Continuation {
    const refused = new JsonRpcRefusal(
      ErrorCode.InvalidParams,
      "Invalid or expired requestState: it is not the state of a call of yours waiting on this server " +
        "(changed, answered already, ended, or another's); call again without it",
    );
    const [payload, mac] = state.split(".");
    if (payload === undefined || mac === undefined || state.length > 4_096) throw refused;
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refused;
    const claim = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as RoundTarget & {
      id: string;
      round: number;
    };
    const continuation = this.waiting.get(claim.id);
    if (
      continuation === undefined ||
      continuation.round !== claim.round ||
      claim.tenant !== target.tenant ||
      claim.principal !== target.principal ||
      claim.method !== target.method ||
      claim.name !== target.name
    )
      throw refused;
    return continuation;
  }

  private mac(payload: string): string {
    return createHmac("sha256", this.key).update(payload).digest("base64url");
  }
}

type Outcome =
  | { readonly kind: "done"; readonly result: JsonObject }
  | { readonly kind: "failed"; readonly error: unknown }
  | { readonly kind: "input"; readonly asks: readonly Ask[] };

/**
 * The client as the servers behind wayfind reach it over connections of their own: what it declared
 * it answers, and the call it serves now, whose questions they are.
 */
class Lane implements SessionClient {
  readonly sessionId = `mrtr-${randomUUID()}`;
  /** The call the lane serves; undefined between calls, when a question has no one to go to. */
  current: Questions | undefined;
  idleSinceMs = 0;

  constructor(
    /** The principal and capabilities it serves. */
    readonly key: string,
    readonly tenantId: string,
    readonly answers: ClientAnswers,
  ) {}

  ownConnections(): boolean {
    return true;
  }

  ended(): boolean {
    return false;
  }

  logLevel(): undefined {
    return undefined;
  }

  /** Notifications have no stream to go in between rounds. */
  tell(): void {}

  ask(
    request: PassedMessage,
    options: { readonly signal: AbortSignal; readonly timeoutMs: number },
  ): Promise<JsonObject> {
    const call = this.current;
    if (call === undefined)
      return Promise.reject(
        new JsonRpcRefusal(ErrorCode.InvalidRequest, "no call is waiting for this answer"),
      );
    return call.ask(request, options);
  }
}

/** One call's questions, held until its client's next round. */
class Questions {
  private readonly asks: Ask[] = [];
  private asked = 0;
  private rounds = 0;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly maxRounds: number) {}

  ask(
    request: PassedMessage,
    options: { readonly signal: AbortSignal; readonly timeoutMs: number },
  ): Promise<JsonObject> {
    if (this.closed)
      return Promise.reject(
        new JsonRpcRefusal(ErrorCode.InvalidRequest, "the call this request came with has ended"),
      );
    if (this.rounds >= this.maxRounds)
      return Promise.reject(
        new JsonRpcRefusal(
          ErrorCode.InvalidRequest,
          `the call has asked its client ${this.maxRounds} rounds of questions, the most wayfind passes on`,
        ),
      );
    return new Promise((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        options.signal.removeEventListener("abort", aborted);
        const at = this.asks.indexOf(ask);
        if (at >= 0) this.asks.splice(at, 1);
      };
      const ask: Ask = {
        key: `${CLIENT_METHODS[request.method] ?? "input"}-${++this.asked}`,
        request,
        resolve: (result) => {
          settle();
          resolve(result);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      };
      const timer = setTimeout(
        () => ask.reject(new JsonRpcRefusal(ErrorCode.RequestTimeout, "the client did not answer in time")),
        options.timeoutMs,
      );
      const aborted = () => ask.reject(options.signal.reason);
      options.signal.addEventListener("abort", aborted, { once: true });
      this.asks.push(ask);
      this.wake?.();
    });
  }

  /** The call's next outcome: its end, or the questions asked since the last round. */
  async next(work: Promise<JsonObject>): Promise<Outcome> {
    if (this.asks.length === 0) {
      const asked = new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      const first = await Promise.race([
        work.then(
          (result): Outcome => ({ kind: "done", result }),
          (error: unknown): Outcome => ({ kind: "failed", error }),
        ),
        asked.then((): undefined => undefined),
      ]);
      this.wake = undefined;
      if (first !== undefined) return first;
      // Questions asked together go in one round.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.rounds++;
    return { kind: "input", asks: [...this.asks] };
  }

  /** The client's answers of a round, by the keys it was asked with; the rest stay asked. */
  answer(responses: Record<string, unknown>): void {
    for (const ask of [...this.asks]) {
      const response = responses[ask.key];
      if (response !== null && typeof response === "object" && !Array.isArray(response))
        ask.resolve(response as JsonObject);
    }
  }

  end(): void {
    this.closed = true;
    for (const ask of [...this.asks])
      ask.reject(new JsonRpcRefusal(ErrorCode.InvalidRequest, "the client did not come back with an answer"));
  }
}
