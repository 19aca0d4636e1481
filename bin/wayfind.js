#!/usr/bin/env -S node --max-semi-space-size=2
// The V8 flag (also in package.json's `start`) caps the young generation at 2 MB a semi-space instead
// of 16: the server's resident memory then stays flat where it otherwise peaked ~60 MB higher while
// a large catalog loads (docs/search.md "Memory"), for a little more time in minor collections.
// Serves the prebuilt JavaScript in dist/ (`npm ci` and `npm run build` make it) when it was built
// from the sources on disk; otherwise runs the TypeScript through tsx, so an edited checkout never
// runs stale code. The prebuilt path saves tsx's ~60 MB of resident memory and its start time.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DIST_CLI, distState } from "../scripts/dist.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
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
