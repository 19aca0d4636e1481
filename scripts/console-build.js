// Bundles the web console (console/) into dist/console/, which the server serves at /console.
// `npm run build` (and so `npm ci`) runs it; the browser tests run it before they start.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Builds the console into `outDir` (default dist/console); returns the gzipped size of its script. */
export async function buildConsole(outDir = join(root, "dist", "console")) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: { app: join(root, "console", "src", "main.tsx") },
    outdir: outDir,
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: "linked",
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "external",
    logLevel: "warning",
  });
  copyFileSync(join(root, "console", "index.html"), join(outDir, "index.html"));
  // Compressed once here, so the server only reads them (src/server/console-files.ts).
  for (const name of readdirSync(outDir))
    writeFileSync(join(outDir, `${name}.gz`), gzipSync(readFileSync(join(outDir, name)), { level: 9 }));
  return readFileSync(join(outDir, "app.js.gz")).length;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const gzipped = await buildConsole();
  process.stdout.write(
    `wayfind console: dist/console/app.js is ${(gzipped / 1024).toFixed(1)} KiB gzipped\n`,
  );
}
