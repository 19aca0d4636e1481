import { describe, expect, it } from "vitest";
import { DEFAULT_ROUND_LIMITS, Rounds } from "../../src/mcp-endpoint/rounds.ts";
import type { SessionClient } from "../../src/tools/mcp-session.ts";

/**
 * The bounds of the calls that wait for a 2026-07-28 client's next round (docs/mcp.md "Questions over
 * rounds"); the rounds themselves, through wayfind to a real server: test/mcp-endpoint/everything.test.ts.
 */

describe("the bounds of waiting calls (Rounds)", () => {
  const target = (tenant: string, name = "t") => ({ tenant, principal: "p", method: "tools/call", name });
  /** A call that asks its client one question and returns the answer it got. */
  const asking = (client: SessionClient, signal: AbortSignal) =>
    client.ask(
      { method: "elicitation/create", params: {} },
      { related: undefined, signal, timeoutMs: 60_000 },
    );
  const answers = { elicitation: {} };

  it("holds at most max_per_tenant waiting calls of a tenant, refusing the next, not another tenant's", async () => {
    const ended: string[] = [];
    const rounds = new Rounds({ ...DEFAULT_ROUND_LIMITS, maxPerTenant: 2 }, async (id) => {
      ended.push(id);
    });
    for (let i = 0; i < 2; i++)
      expect((await rounds.start(target("acme"), answers, asking)).resultType).toBe("input_required");
    await expect(rounds.start(target("acme"), answers, asking)).rejects.toThrow(/2 calls of your tenant/);
    expect((await rounds.start(target("bravo"), answers, asking)).resultType).toBe("input_required");
    // Closing ends every call and closes every lane's connections: four calls, four lanes.
    rounds.close();
    expect(new Set(ended).size).toBe(4);
  });

  it("gives a principal's next call the lane its last call left: one connection, not one a call", async () => {
    const lanes: string[] = [];
    const rounds = new Rounds(DEFAULT_ROUND_LIMITS, async () => {});
    const noting = async (client: SessionClient) => {
      lanes.push(client.sessionId);
      return { content: [] };
    };
    await rounds.start(target("acme"), answers, noting);
    await rounds.start(target("acme"), answers, noting);
    await rounds.start({ ...target("acme"), principal: "other" }, answers, noting);
    await rounds.start(target("acme"), { sampling: {} }, noting);
    expect(lanes[1]).toBe(lanes[0]);
    expect(new Set(lanes).size).toBe(3);
  });

  it("closes a lane no call has used for lane_idle_ms, its connections with it", async () => {
    const ended: string[] = [];
    const rounds = new Rounds({ ...DEFAULT_ROUND_LIMITS, laneIdleMs: 40 }, async (id) => {
      ended.push(id);
    });
    let lane = "";
    await rounds.start(target("acme"), answers, async (client) => {
      lane = client.sessionId;
      return { content: [] };
    });
    expect(ended).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(ended).toEqual([lane]);
    rounds.close();
  });

  it("ends a call whose client does not come back within the round's time: its question is refused", async () => {
    let refused: unknown;
    const rounds = new Rounds({ ...DEFAULT_ROUND_LIMITS, roundTimeoutMs: 50 }, async () => {});
    const first = await rounds.start(target("acme"), answers, (client, signal) =>
      asking(client, signal).catch((error: unknown) => {
        refused = error;
        return {};
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(String(refused)).toMatch(/did not come back/);
    await expect(rounds.resume(String(first.requestState), target("acme"), {})).rejects.toThrow(
      /Invalid or expired/,
    );
  });

  it("passes on at most max_rounds rounds of questions: a server that asks forever is refused", async () => {
    let lastError: unknown;
    const rounds = new Rounds({ ...DEFAULT_ROUND_LIMITS, maxRounds: 3 }, async () => {});
    const forever = async (client: SessionClient, signal: AbortSignal) => {
      for (;;) {
        try {
          await asking(client, signal);
        } catch (error) {
          lastError = error;
          return { content: [] };
        }
      }
    };
    let answer = await rounds.start(target("acme"), answers, forever);
    let roundsSeen = 1;
    while (answer.resultType === "input_required") {
      const [key] = Object.keys(answer.inputRequests as object);
      answer = await rounds.resume(String(answer.requestState), target("acme"), {
        [String(key)]: { action: "decline" },
      });
      roundsSeen++;
    }
    expect(roundsSeen).toBe(4);
    expect(String(lastError)).toMatch(/3 rounds of questions/);
  });
});
