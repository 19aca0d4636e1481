import { describe, expect, it } from "vitest";
import { TurnBudget } from "../../../src/server/transport/turn-budget.ts";
import { busyFor } from "../../support/cpu.ts";

describe("TurnBudget", () => {
  it("lets timers and I/O run between slices while many loops share a long burst of work", async () => {
    const budget = new TurnBudget(5);
    const loops = 100;
    const piecesPerLoop = 20;
    let done = 0;
    // Scheduled before the burst: without slicing it would fire only once all the work is finished.
    let doneWhenTimerFired = -1;
    setTimeout(() => {
      doneWhenTimerFired = done;
    }, 0);
    await Promise.all(
      Array.from({ length: loops }, async () => {
        for (let piece = 0; piece < piecesPerLoop; piece++) {
          const nextTurn = budget.spent();
          if (nextTurn) await nextTurn;
          busyFor(0.05);
          done++;
        }
      }),
    );
    expect(doneWhenTimerFired).toBeGreaterThan(0);
    expect(doneWhenTimerFired).toBeLessThan(loops * piecesPerLoop);
  });

  it("runs the work of waiters that resume together only while the new turn has budget left", async () => {
    const budget = new TurnBudget(5);
    const loops = 200;
    let piecesThisTurn = 0;
    let mostPiecesInATurn = 0;
    let running = true;
    const onCheckPhase = () => {
      mostPiecesInATurn = Math.max(mostPiecesInATurn, piecesThisTurn);
      piecesThisTurn = 0;
      if (running) setImmediate(onCheckPhase);
    };
    setImmediate(onCheckPhase);
    await Promise.all(
      Array.from({ length: loops }, async () => {
        for (let piece = 0; piece < 5; piece++) {
          await budget.run(() => {
            busyFor(0.2);
            piecesThisTurn++;
          });
        }
      }),
    );
    running = false;
    // 5 ms of 0.2 ms pieces is about 25 a turn; every waiter taking one piece at once would be 200.
    expect(mostPiecesInATurn).toBeLessThan(loops / 2);
  });

  it("costs nothing while the turn has budget left: no promise to await", () => {
    const budget = new TurnBudget(1_000);
    expect([budget.spent(), budget.spent(), budget.spent()]).toEqual([undefined, undefined, undefined]);
  });
});
