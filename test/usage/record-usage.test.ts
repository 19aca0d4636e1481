import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/database/sqlite.ts";
import { type FieldViolation, WayfindError } from "../../src/errors.ts";
import { EventLog, eventsMigrations } from "../../src/events/index.ts";
import { PricingTable, UsageLedger, usageMigrations } from "../../src/usage/index.ts";
import { caller, harness, openUsageDb, tempDbFile, usage } from "./helpers.ts";

const sonnet = { provider: "anthropic", model: "claude-sonnet-4-5" } as const;

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof WayfindError) return e.code;
    throw e;
  }
  return "no error";
}

describe("recordUsage", () => {
  it("returns the call's cost in USD from the model's prices", () => {
    const { ledger } = harness();
    // 1M input at $3, 1M output at $15, 1M cache reads at $0.30, 1M 5m cache writes at $3.75
    const result = ledger.recordUsage(caller(), {
      ...sonnet,
      usage: usage(1_000_000, 1_000_000, 1_000_000, 1_000_000),
      idempotencyKey: "k1",
    });
    expect(result.costUsd).toBeCloseTo(3 + 15 + 0.3 + 3.75, 10);
    expect(result.duplicate).toBe(false);
  });

  it("prices 1-hour cache writes at their own rate", () => {
    const { ledger } = harness();
    const result = ledger.recordUsage(caller(), {
      ...sonnet,
      usage: { ...usage(0, 0, 0, 1_000_000), cacheCreation1hInputTokens: 400_000 },
      idempotencyKey: "k1",
    });
    expect(result.costUsd).toBeCloseTo(0.6 * 3.75 + 0.4 * 6, 10);
  });

  it("reports an unknown cost, never zero, for a model without a price", () => {
    const { ledger } = harness();
    const result = ledger.recordUsage(caller(), {
      provider: "other",
      model: "my-local-llama",
      usage: usage(1000, 10),
      idempotencyKey: "k1",
    });
    expect(result.costUsd).toBeNull();
    expect(result.unknownCostReason).toMatch(/no price for other model "my-local-llama"/);
  });

  it("counts a retried call with the same key and values once and returns the original result", () => {
    const { ledger, events } = harness();
    const input = { ...sonnet, usage: usage(100, 20), idempotencyKey: "resp_123" };
    const first = ledger.recordUsage(caller(), input);
    const retry = ledger.recordUsage(caller(), input);
    expect(retry).toEqual({ ...first, duplicate: true });
    expect(ledger.getUsageSummary(caller()).totals.calls).toBe(1);
    expect(events).toHaveLength(1);
  });

  it("rejects the same key with different values as already_exists and names what differs", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller(), { ...sonnet, usage: usage(100, 20), idempotencyKey: "resp_123" });
    const again = () =>
      ledger.recordUsage(caller(), { ...sonnet, usage: usage(101, 20), idempotencyKey: "resp_123" });
    expect(codeOf(again)).toBe("already_exists");
    expect(again).toThrow(/different usage record \(differs in: input_tokens\)/);
    expect(ledger.getUsageSummary(caller()).totals.inputTokens).toBe(100);
  });

  it("recognises a retry that arrives later without occurredAt", () => {
    let now = Date.parse("2026-03-01T10:00:00Z");
    const { ledger } = harness({ now: () => now });
    const input = { ...sonnet, usage: usage(100), idempotencyKey: "resp_1" };
    const first = ledger.recordUsage(caller(), input);
    now += 60_000;
    expect(ledger.recordUsage(caller(), input)).toEqual({ ...first, duplicate: true });
  });

  it("counts a key once across two connections to the same database", () => {
    const a = harness();
    const b = harness({ file: a.file });
    const input = { ...sonnet, usage: usage(5), idempotencyKey: "k" };
    a.ledger.recordUsage(caller(), input);
    expect(b.ledger.recordUsage(caller(), input).duplicate).toBe(true);
    expect(b.ledger.getUsageSummary(caller()).totals.calls).toBe(1);
  });

  it("scopes idempotency keys to the tenant", () => {
    const { ledger } = harness();
    const input = { ...sonnet, usage: usage(100), idempotencyKey: "same" };
    ledger.recordUsage(caller({ tenantId: "a" }), input);
    expect(ledger.recordUsage(caller({ tenantId: "b" }), input).duplicate).toBe(false);
  });

  it("is durable: a record is visible from a new connection once recordUsage returns", () => {
    const h = harness();
    h.ledger.recordUsage(caller(), { ...sonnet, usage: usage(7), idempotencyKey: "k" });
    const other = openUsageDb(h.file);
    expect(other.prepare("SELECT input_tokens FROM usage_records").pluck().get()).toBe(7);
  });

  it("commits usage_recorded in the record's own transaction: both are in SQLite when the call returns", () => {
    const db = openDatabase(tempDbFile(), [...eventsMigrations, ...usageMigrations]);
    const log = new EventLog(db, { pruneIntervalMs: 0 });
    const ledger = new UsageLedger({ db, events: log });
    const { recordId } = ledger.recordUsage(caller(), { ...sonnet, usage: usage(7), idempotencyKey: "k" });
    // Read through a second connection: only committed rows are visible there.
    const other = new Database(db.name, { readonly: true });
    const stored = other
      .prepare("SELECT json_extract(attributes, '$.record_id') FROM events WHERE type = 'usage_recorded'")
      .pluck()
      .all();
    other.close();
    log.close();
    db.close();
    expect(stored).toEqual([recordId]);
  });

  it("emits usage_recorded with the caller's tenant, session, run, tokens and cost", () => {
    const { ledger, events } = harness();
    ledger.recordUsage(caller(), { ...sonnet, usage: usage(1000, 100, 50, 0), idempotencyKey: "k" });
    expect(events).toEqual([
      {
        type: "usage_recorded",
        tenantId: "acme",
        sessionId: "s1",
        runId: "r1",
        attributes: expect.objectContaining({
          provider: "anthropic",
          model: "claude-sonnet-4-5",
          input_tokens: 1000,
          cache_read_input_tokens: 50,
          cost_known: true,
          cost_usd: expect.any(Number),
        }),
      },
    ]);
  });

  it("keeps the cost it recorded when prices change later", () => {
    const file = harness().file;
    const first = harness({ file });
    const input = { ...sonnet, usage: usage(1_000_000), idempotencyKey: "k" };
    first.ledger.recordUsage(caller(), input);
    const repriced = harness({
      file,
      pricing: PricingTable.withDefaults([{ ...sonnet, input: 99, output: 99 }]),
    });
    expect(repriced.ledger.recordUsage(caller(), input).costUsd).toBeCloseTo(3, 10);
  });

  it.each([
    [
      "a negative count",
      { usage: usage(-1) },
      /usage.input_tokens: must be a whole number from 0 to 10000000/,
    ],
    ["an absurd count", { usage: usage(10_000_001) }, /usage.input_tokens/],
    ["a fractional count", { usage: usage(1.5) }, /usage.input_tokens/],
    ["an unknown provider", { provider: "azure" }, /provider: "azure" is unknown/],
    ["an empty model", { model: "  " }, /model: must be the model id/],
    ["a missing key", { idempotencyKey: "" }, /idempotency_key: is required/],
    ["an oversize key", { idempotencyKey: "x".repeat(129) }, /idempotency_key: must be at most 128/],
    [
      "1h writes above total writes",
      { usage: { ...usage(0, 0, 0, 10), cacheCreation1hInputTokens: 11 } },
      /must not exceed cache_creation_input_tokens/,
    ],
    [
      "a far-future time",
      { occurredAt: new Date(Date.now() + 3 * 86_400_000) },
      /occurred_at: is more than 24 hours/,
    ],
  ])("rejects %s as invalid_argument saying what to fix", (_name, override, message) => {
    const { ledger } = harness();
    const input = { ...sonnet, usage: usage(1), idempotencyKey: "k", ...override } as Parameters<
      typeof ledger.recordUsage
    >[1];
    expect(codeOf(() => ledger.recordUsage(caller(), input))).toBe("invalid_argument");
    expect(() => ledger.recordUsage(caller(), input)).toThrow(message);
  });

  it("names the first of several problems in the message and lists every one in the details", () => {
    const { ledger } = harness();
    const input = {
      provider: "azure",
      model: "  ",
      usage: usage(-1),
      idempotencyKey: "",
    } as unknown as Parameters<typeof ledger.recordUsage>[1];
    let error: unknown;
    try {
      ledger.recordUsage(caller(), input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WayfindError);
    const { code, message, details } = error as WayfindError;
    expect(code).toBe("invalid_argument");
    const problems = details as readonly FieldViolation[];
    expect(problems[0]?.description).toMatch(/^"azure" is unknown; use one of /);
    expect(message).toBe(
      `invalid usage record: provider: ${problems[0]?.description} (and 3 more in the details)`,
    );
    expect(message).not.toMatch(/model:|idempotency_key:|usage\.input_tokens:/);
    expect(problems.map((problem) => problem.field)).toEqual([
      "provider",
      "model",
      "idempotency_key",
      "usage.input_tokens",
    ]);
  });
});
