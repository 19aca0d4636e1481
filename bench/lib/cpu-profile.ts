/**
 * Reads a V8 `.cpuprofile` (node --cpu-prof) and ranks functions by self and total time, optionally
 * only over samples inside given time windows (e.g. the measured load runs of one RPC). Window
 * bounds are CLOCK_MONOTONIC µs, the clock of both the profile's timestamps and
 * `process.hrtime` in any process on the machine.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface HotSpot {
  /** `function (file)`, the file relative to the repo when inside it. */
  readonly where: string;
  readonly selfPct: number;
  /** Share of samples with this function anywhere on the stack. */
  readonly totalPct: number;
}

export interface ProfileSummary {
  readonly samples: number;
  readonly top: HotSpot[];
}

/** Monotonic now in µs, comparable with the profile's timestamps. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * The main thread's `.cpuprofile` in `dir`: the largest (node writes one per thread, e.g. a small
 * one for the tsx loader thread, named CPU.<date>.<time>.<pid>.<thread>.<seq>).
 */
export function mainThreadProfile(dir: string): string | undefined {
  const [largest] = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => ({ path: join(dir, f), size: statSync(join(dir, f)).size }))
    .sort((a, b) => b.size - a.size);
  return largest?.path;
}

/**
 * Functions ranked by self (or total) time over the samples in `windows` (all samples when empty),
 * keeping those `keep` accepts (by repo-relative file; e.g. only src/), at most `limit`.
 */
export function summarizeProfile(
  file: string,
  root: string,
  windows: readonly { startUs: number; endUs: number }[],
  keep: (relativeFile: string) => boolean,
  limit: number,
  by: "self" | "total" = "self",
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const keyOf = (node: ProfileNode): string => {
    // By file, not line: built (dist/) or transpiled (tsx) code reports positions in the JavaScript.
    const { functionName, url } = node.callFrame;
    const path = url.replace(/^file:\/\//, "");
    const file = path.startsWith(`${root}/`)
      ? path.slice(root.length + 1).replace(/^dist\/(.*)\.js$/, "$1.ts")
      : path || "(native)";
    return `${functionName || "(anonymous)"} (${file})`;
  };
  const fileOf = (key: string): string => /\(([^()]*)\)$/.exec(key)?.[1] ?? "";

  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let counted = 0;
  let at = profile.startTime;
  const inWindow = (t: number) => windows.length === 0 || windows.some((w) => t >= w.startUs && t <= w.endUs);
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (!inWindow(at)) return;
    const leaf = byId.get(id);
    if (!leaf) return;
    counted++;
    const leafKey = keyOf(leaf);
    self.set(leafKey, (self.get(leafKey) ?? 0) + 1);
    const onStack = new Set<string>();
    for (let node: ProfileNode | undefined = leaf; node; ) {
      onStack.add(keyOf(node));
      const up = parent.get(node.id);
      node = up === undefined ? undefined : byId.get(up);
    }
    for (const key of onStack) total.set(key, (total.get(key) ?? 0) + 1);
  });
  const pct = (n: number) => (counted === 0 ? 0 : (n / counted) * 100);
  const top = [...total.keys()]
    .filter((key) => keep(fileOf(key)))
    .map((key) => ({ where: key, selfPct: pct(self.get(key) ?? 0), totalPct: pct(total.get(key) ?? 0) }))
    .sort((a, b) =>
      by === "self" ? b.selfPct - a.selfPct || b.totalPct - a.totalPct : b.totalPct - a.totalPct,
    )
    .slice(0, limit);
  return { samples: counted, top };
}
