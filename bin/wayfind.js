#!/usr/bin/env node
// `wayfind serve` first replaces its process with one tuned for a long-running server (allocator
// environment and V8 flags: scripts/tuning.js), so its memory is the same however it was launched.
// Serves the prebuilt JavaScript in dist/ (`npm ci` and `npm run build` make it) when it was built
// from the sources on disk; otherwise runs the TypeScript through tsx, so an edited checkout never
// runs stale code. The prebuilt path saves tsx's ~60 MB of resident memory and its start time.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DIST_CLI, distState } from "../scripts/dist.js";
import { nativeModuleProblem } from "../scripts/native.js";
import { tuneProcess } from "../scripts/tuning.js";

// Before anything else is loaded: a replaced process starts over from here.
if (process.argv[2] === "serve") tuneProcess();

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Said before anything else fails in Node's own words, which name neither the cause nor the fix.
if (Number(process.versions.node.split(".")[0]) < 22) {
  process.stderr.write(
    `wayfind: needs Node.js 22 or newer, and this is ${process.version}; put one first on PATH, e.g.\n` +
      '  export PATH="$(bash scripts/node-from-npm.sh)/bin:$PATH"\n',
  );
  process.exit(1);
}
const native = nativeModuleProblem(root);
if (native !== undefined) {
  process.stderr.write(`wayfind: ${native.message}\n`);
  process.exit(1);
}
const state = distState(root);
if (state === "fresh") {
  await import(pathToFileURL(join(root, DIST_CLI)).href);
} else {
  // Said only when a build exists: a checkout that never built has nothing to refresh.
  if (state === "stale")
    process.stderr.write(
      "wayfind: dist/ is older than the sources, running them through tsx (npm run build)\n",
    );
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
