import type { Caller } from "../caller/caller.ts";
import { RetryLaterError } from "../errors.ts";
import { LruCache } from "../lru.ts";
import { TokenBucket } from "../token-bucket.ts";

// What a lesson is: who teaches it, what a choice or an outcome teaches, under which key, and how
// often an actor may teach.

export type Outcome = "succeeded" | "failed" | "wrong_tool";

/** How a hit was chosen: looked at or activated (GetTools, ResolveTool, ActivateTools), or called validly. */
export type Choice = "selected" | "dispatched";

/** What a choice or an outcome teaches the chosen tool, and each hit ranked above it that was passed over. */
export const TEACHES = {
  selected: 1,
  dispatched: 1.5,
  /** A dispatch of a tool already counted as selected adds the difference. */
  dispatchedAfterSelected: 0.5,
  succeeded: 1,
  failed: -0.25,
  wrong_tool: -1.5,
  passedOver: -0.2,
} as const;
/** Hits above the chosen one that count as passed over. */
export const PASSED_OVER_MAX = 5;
/** Learned requests are stored clipped to this many characters. */
const REQUEST_MAX_CHARS = 512;
/** Actors whose lesson buckets are kept; the least recently teaching is forgotten (a full bucket again). */
const ACTORS_TRACKED = 10_000;

/**
 * Skills are learned beside tools, under their name with this prefix: no tool name holds a colon, so
 * a skill's lessons never lift a tool.
 */
const SKILL_KEY = "skill:";

/** The key a skill's lessons are stored under. */
export function skillKey(skill: string): string {
  return `${SKILL_KEY}${skill}`;
}

/** The learned scores of one kind, under their own names. */
export function ofKind(scores: ReadonlyMap<string, number>, kind: "tool" | "skill"): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, score] of scores) {
    const isSkill = key.startsWith(SKILL_KEY);
    if (kind === "skill" && isSkill) out.set(key.slice(SKILL_KEY.length), score);
    else if (kind === "tool" && !isSkill) out.set(key, score);
  }
  return out;
}

/** Who a lesson counts for: the credential, or without credentials the user the caller names. */
export function actorOf(caller: Caller): string {
  if (caller.actor !== undefined && caller.actor !== "anonymous") return caller.actor;
  return caller.userId === "" ? "anonymous" : `user:${caller.userId}`;
}

/** A request as stored: control characters and runs of space as one space, clipped. */
export function clip(request: string): string {
  return request
    .replace(/[\s\p{Cc}]+/gu, " ")
    .trim()
    .slice(0, REQUEST_MAX_CHARS);
}

/** Each actor's lessons per second (`learning.lessons_per_second`), with a burst of ten seconds' worth. */
export class LessonRate {
  private readonly buckets = new LruCache<string, TokenBucket>(ACTORS_TRACKED);

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number,
  ) {}

  /** One lesson from `actor`'s bucket; an explicit report over the rate is RESOURCE_EXHAUSTED. */
  admit(actor: string, explicit: boolean): boolean {
    const rate = this.perSecond;
    const now = this.now();
    const bucket = this.buckets.get(actor) ?? new TokenBucket(rate, rate * 10, now);
    this.buckets.set(actor, bucket);
    if (bucket.take(now)) return true;
    if (!explicit) return false;
    const waitMs = Math.ceil(bucket.waitMs());
    throw new RetryLaterError(
      `too many outcome reports from this principal: at most ${rate} per second are learned from; retry in ${waitMs} ms`,
      waitMs,
    );
  }
}
