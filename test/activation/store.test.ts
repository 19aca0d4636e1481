import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { WayfindError } from "../../src/errors.ts";
import { caller } from "../access/fixtures.ts";
import { openStore, tempDir } from "./helpers.ts";

const explicit = (scope: "run" | "session") => ({ scope, source: "explicit" as const, reason: "add_tool" });

describe("ActivationStore", () => {
  it("reports newly activated vs already active names", async () => {
    const { store } = openStore();
    expect(await store.activate(caller(), ["a", "b"], explicit("run"))).toEqual({
      activated: ["a", "b"],
      alreadyActive: [],
    });
    expect(await store.activate(caller(), ["b", "c"], explicit("run"))).toEqual({
      activated: ["c"],
      alreadyActive: ["b"],
    });
  });

  it("returns activations oldest first, run and session merged, each name once", async () => {
    const { store, clock } = openStore();
    await store.activate(caller(), ["z"], explicit("session"));
    clock.now += 10;
    await store.activate(caller(), ["a", "z"], explicit("run"));
    clock.now += 10;
    await store.activate(caller(), ["m"], explicit("session"));
    expect(store.activeFor(caller())).toEqual(["z", "a", "m"]);
  });

  it("rejects session scope without a session id with failed_precondition and a nameless deny event", async () => {
    const { store, events } = openStore();
    const act = () => store.activate(caller({ sessionId: "" }), ["secret.tool"], explicit("session"));
    await expect(act()).rejects.toThrowError(WayfindError);
    await expect(act()).rejects.toThrowError(/session_id/);
    await expect(act()).rejects.toMatchObject({ code: "failed_precondition" });
    const denied = events.filter((e) => e.type === "tool_activation_denied");
    // One denial per attempt above (three), none naming the tool.
    expect(denied.map((e) => e.attributes.reason)).toEqual([
      "missing_scope_id",
      "missing_scope_id",
      "missing_scope_id",
    ]);
    expect(JSON.stringify(denied)).not.toContain("secret.tool");
  });

  it("rejects run scope without a run id with failed_precondition", async () => {
    const { store } = openStore();
    await expect(store.activate(caller({ runId: "" }), ["a"], explicit("run"))).rejects.toThrowError(
      expect.objectContaining({ code: "failed_precondition" }),
    );
  });

  it("keeps session activations across a restart", async () => {
    const first = openStore();
    await first.store.activate(caller(), ["a", "b"], explicit("session"));
    first.db.close();
    const second = openStore({ file: first.file });
    expect(second.store.activeFor(caller({ runId: "another-run" }))).toEqual(["a", "b"]);
  });

  it("expires run activations after the idle TTL", async () => {
    const { store, clock } = openStore({ ttlSeconds: 60 });
    await store.activate(caller(), ["a"], explicit("run"));
    clock.now += 61_000;
    expect(store.activeFor(caller())).toEqual([]);
  });

  it("keeps a used run alive: reads reset the idle clock", async () => {
    const { store, clock } = openStore({ ttlSeconds: 60 });
    await store.activate(caller(), ["a"], explicit("run"));
    clock.now += 50_000;
    expect(store.activeFor(caller())).toEqual(["a"]);
    clock.now += 50_000;
    expect(store.activeFor(caller())).toEqual(["a"]);
  });

  it("treats re-activating an expired run activation as new", async () => {
    const { store, clock, events } = openStore({ ttlSeconds: 60 });
    await store.activate(caller(), ["a"], explicit("run"));
    clock.now += 61_000;
    expect((await store.activate(caller(), ["a"], explicit("run"))).activated).toEqual(["a"]);
    expect(events.filter((e) => e.type === "tool_activated")).toHaveLength(2);
  });

  it("emits tool_activated with tool, scope, source and reason only for new activations", async () => {
    const { store, events } = openStore();
    await store.activate(caller(), ["a"], explicit("session"));
    await store.activate(caller(), ["a"], explicit("session"));
    expect(events).toEqual([
      {
        type: "tool_activated",
        tenantId: "acme",
        sessionId: "s1",
        runId: "r1",
        attributes: { tool: "a", scope: "session", source: "explicit", reason: "add_tool" },
      },
    ]);
  });

  it("isolates tenants that reuse a session id", async () => {
    const { store } = openStore();
    await store.activate(caller({ tenantId: "acme" }), ["a"], explicit("session"));
    expect(store.activeFor(caller({ tenantId: "other" }))).toEqual([]);
  });

  it("deactivates without reordering what remains", async () => {
    const { store } = openStore();
    await store.activate(caller(), ["a", "b", "c"], explicit("run"));
    expect(await store.deactivate(caller(), ["b", "x"], "run")).toEqual({
      deactivated: ["b"],
      notActive: ["x"],
    });
    expect(store.activeFor(caller())).toEqual(["a", "c"]);
  });

  it("validates names", async () => {
    const { store } = openStore();
    await expect(store.activate(caller(), [], explicit("run"))).rejects.toThrowError(
      expect.objectContaining({ code: "invalid_argument" }),
    );
    await expect(store.activate(caller(), [" "], explicit("run"))).rejects.toThrowError(
      expect.objectContaining({ code: "invalid_argument" }),
    );
  });

  it("loses and duplicates nothing when processes activate in one session at once", async () => {
    const file = join(tempDir(), "shared.db");
    openStore({ file }).db.close(); // migrate once up front
    const names = Array.from({ length: 40 }, (_, i) => `t${i}`);
    const run = promisify(execFile);
    const worker = join(import.meta.dirname, "worker.ts");
    const startAt = String(Date.now() + 4000);
    const outputs = await Promise.all(
      [0, 1, 2, 3].map((k) => {
        const order = k % 2 === 0 ? names : [...names].reverse();
        return run(process.execPath, [
          "--import",
          "tsx",
          worker,
          file,
          "shared-session",
          JSON.stringify(order),
          startAt,
        ]);
      }),
    );
    const claimed = outputs.flatMap((o) => JSON.parse(o.stdout) as string[]);
    expect([...claimed].sort()).toEqual([...names].sort()); // each name newly activated exactly once
    const { store, db } = openStore({ file });
    expect(store.activeFor(caller({ sessionId: "shared-session", runId: "" })).sort()).toEqual(
      [...names].sort(),
    );
    const rows = db.prepare("SELECT COUNT(*) AS n FROM tool_activations").get() as { n: number };
    expect(rows.n).toBe(names.length);
  }, 60_000);
});
