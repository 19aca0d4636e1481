// `npm run build` (and `prepare`, so `npm ci` runs it): bundles the web console to dist/console/
// (scripts/console-build.js), and compiles src/ and the gen/ts it imports to dist/, which
// bin/wayfind.js serves instead of running TypeScript through tsx (tsx costs ~60 MB of resident
// memory and ~0.5 s of start time). Says what it does as it goes: `npm ci` shows this script's
// output, and the compile alone takes a minute or more on a small machine.
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildConsole } from "./console-build.js";
import { fingerprint, MANIFEST } from "./dist.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const started = performance.now();
const seconds = (since) => `${((performance.now() - since) / 1000).toFixed(1)} s`;
const say = (line) => process.stderr.write(`wayfind build: ${line}\n`);

// A fresh dist/: files of deleted sources must not linger, and no manifest until the build succeeds.
rmSync(join(root, "dist"), { recursive: true, force: true });
say("bundling the web console (esbuild) into dist/console/");
const bundled = performance.now();
const gzipped = await buildConsole();
say(`console bundled in ${seconds(bundled)} (app.js ${(gzipped / 1024).toFixed(0)} KiB gzipped)`);

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  // An install without dev dependencies: bin/wayfind.js runs the sources through tsx instead.
  say("typescript is not installed; the server is not compiled (wayfind will run through tsx)");
  process.exit(0);
}

// Fingerprinted before compiling: a file edited while tsc runs then reads as stale, never as fresh.
const files = fingerprint(root);
say("compiling the server (tsc) into dist/");
const compiling = performance.now();
const { status } = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
  cwd: root,
  stdio: "inherit",
});
if (status !== 0) {
  say("tsc failed; dist/ is not used until a build succeeds");
  process.exit(status ?? 1);
}
writeFileSync(join(root, MANIFEST), `${JSON.stringify({ files }, null, 1)}\n`);
say(`server compiled in ${seconds(compiling)}; built in ${seconds(started)}`);
