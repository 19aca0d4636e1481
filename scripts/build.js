// `npm run build` (and `prepare`, so `npm ci` runs it): bundles the web console to dist/console/
// (scripts/console-build.js), and compiles src/ and the gen/ts it imports to dist/, which
// bin/wayfind.js serves instead of running TypeScript through tsx (tsx costs ~60 MB of resident
// memory and ~0.5 s of start time).
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildConsole } from "./console-build.js";
import { fingerprint, MANIFEST } from "./dist.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// A fresh dist/: files of deleted sources must not linger, and no manifest until the build succeeds.
rmSync(join(root, "dist"), { recursive: true, force: true });
await buildConsole();

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  // An install without dev dependencies: bin/wayfind.js runs the sources through tsx instead.
  process.stderr.write(
    "wayfind build: typescript is not installed; skipped (wayfind will run through tsx)\n",
  );
  process.exit(0);
}

// Fingerprinted before compiling: a file edited while tsc runs then reads as stale, never as fresh.
const files = fingerprint(root);
const { status } = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
  cwd: root,
  stdio: "inherit",
});
if (status !== 0) {
  process.stderr.write("wayfind build: tsc failed; dist/ is not used until a build succeeds\n");
  process.exit(status ?? 1);
}
writeFileSync(join(root, MANIFEST), `${JSON.stringify({ files }, null, 1)}\n`);
