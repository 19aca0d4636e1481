import type { Caller, Principal } from "../caller/caller.ts";
import { WayfindError } from "../errors.ts";
import type { ApiKeyStore } from "./api-keys.ts";
import type { Authenticator } from "./authenticate.ts";

/** How often what is open is checked against the key table and the clock. */
const CHECK_INTERVAL_MS = 250;

/** Refusals that end a stream or session: the credential is refused, or can no longer be vouched for. */
const ENDS_WHAT_IS_OPEN = new Set(["unauthenticated", "unavailable"]);

interface Watched {
  readonly headers: Headers;
  readonly claimed: Caller;
  readonly expiresAtMs: number | undefined;
  readonly lost: (error: WayfindError) => void;
}

/**
 * Keeps what outlives one call — watch streams, MCP sessions — to credentials that are still
 * accepted: a key revoked (over the API, by `wayfind keys revoke` in another process, or on another
 * replica: the change reaches this one's copy) or a key or token that expires ends them within a
 * check interval, with the UNAUTHENTICATED error a new call with the same credential would get (or
 * UNAVAILABLE, for a created key on a replica that lost touch with the fleet's keys). A check costs nothing while neither the key table nor any
 * expiry moved; when one did, each affected credential is authenticated again (a cached lookup).
 */
export class CredentialWatch {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;
  private seenRevision: string;
  private checkedThisTurn = false;

  constructor(
    private readonly authenticator: Authenticator,
    private readonly keys: ApiKeyStore,
  ) {
    this.seenRevision = keys.revision();
  }

  /**
   * Calls `lost` once, with why, when the credential in `headers` stops being accepted; never for a
   * call without credentials. Returns the release, to call when what it guards ends.
   */
  watch(
    headers: Headers,
    claimed: Caller,
    principal: Principal,
    lost: (error: WayfindError) => void,
  ): () => void {
    if (principal.id === "anonymous") return () => {};
    const entry: Watched = { headers, claimed, expiresAtMs: principal.expiresAtMs, lost };
    this.watched.add(entry);
    this.timer ??= setInterval(() => this.check(), CHECK_INTERVAL_MS).unref();
    return () => this.release(entry);
  }

  /**
   * Checks what is open at once rather than at the next interval (before a stream sends a message):
   * as cheap as a timed check while neither the key table nor any expiry moved.
   */
  checkNow(): void {
    // Once an event-loop turn: a fan-out of one event to every stream checks the key table once.
    if (this.watched.size === 0 || this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(() => {
      this.checkedThisTurn = false;
    });
    this.check();
  }

  /** Stops watching everything (the server stops). */
  close(): void {
    this.watched.clear();
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private release(entry: Watched): void {
    this.watched.delete(entry);
    if (this.watched.size > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(now = Date.now()): void {
    const revision = this.keys.revision();
    const keysChanged = revision !== this.seenRevision;
    this.seenRevision = revision;
    for (const entry of this.watched)
      if (keysChanged || (entry.expiresAtMs !== undefined && entry.expiresAtMs <= now))
        this.recheck(entry, now);
  }

  private recheck(entry: Watched, now: number): void {
    const refused = (error: unknown) => {
      // Unavailable: a replica cut off from the fleet's keys no longer vouches for a created key.
      if (!(error instanceof WayfindError) || !ENDS_WHAT_IS_OPEN.has(error.code)) return;
      if (!this.watched.has(entry)) return;
      this.release(entry);
      entry.lost(error);
    };
    try {
      const principal = this.authenticator.authenticate(entry.headers, entry.claimed, now);
      if (principal instanceof Promise) principal.catch(refused);
    } catch (error) {
      refused(error);
    }
  }
}
