// training/train.py composes requests of two intents from single-tool training pairs, so the model
// learns that such a request sits near both of its tools.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const TRAINING = resolve(import.meta.dirname, "../../training");

const pair = (request: string, tool: string, source: string, nGold = 1) => ({
  request,
  tool: { name: tool, description: `${tool} does things` },
  source,
  n_gold: nGold,
});

/** train.py's compose_two_intents over `kept`, asked for `count` couples (seeded). */
function compose(kept: object[], count: number): [string, string][] {
  const script = `
import json, random, sys
sys.path.insert(0, ${JSON.stringify(TRAINING)})
from train import compose_two_intents
random.seed(7)
kept = json.loads(sys.stdin.read())
print(json.dumps([[r, t["name"]] for r, t in compose_two_intents(kept, ${count})]))`;
  const run = spawnSync("python3", ["-c", script], { input: JSON.stringify(kept), encoding: "utf8" });
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout) as [string, string][];
}

describe("training/train.py compose_two_intents", () => {
  const kept = [
    pair("find a hotel in Rome", "hotels", "a"),
    pair("what is the weather in Oslo", "weather", "a"),
    pair("convert 20 USD to EUR", "currency", "a"),
    pair("book a flight and a car", "flights", "a", 2),
    pair("translate this into German", "translate", "b"),
  ];

  it("pairs each composed request with both of its tools, two different tools of one source", () => {
    const couples = compose(kept, 6);
    expect(couples).toHaveLength(6);
    for (let i = 0; i < couples.length; i += 2) {
      const [request, first] = couples[i] as [string, string];
      const [same, second] = couples[i + 1] as [string, string];
      expect(same).toBe(request);
      expect(first).not.toBe(second);
      expect(["hotels", "weather", "currency"]).toContain(first);
      expect(["hotels", "weather", "currency"]).toContain(second);
    }
  });

  it("joins the two requests whole, and never composes from a request that already asks for several tools", () => {
    for (const [request] of compose(kept, 10)) {
      expect(request).not.toContain("book a flight");
      expect(request).not.toContain("translate");
      const parts = kept.map((p) => p.request.replace(/[ .?!]+$/, "")).filter((r) => request.includes(r));
      expect(parts).toHaveLength(2);
    }
  });
});
