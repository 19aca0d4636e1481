// Whether dist/ (the prebuilt JavaScript, `npm run build`) matches the TypeScript it was built from.
// Plain JavaScript: bin/wayfind.js needs the answer before any TypeScript can run.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** What the build reads: the sources src/ imports and the compiler settings. */
const INPUTS = ["src", "gen/ts", "tsconfig.json", "tsconfig.build.json"];
/** Written by scripts/build.js after a successful build; its absence means "not built". */
export const MANIFEST = "dist/sources.json";
/** The built CLI, relative to the checkout. */
export const DIST_CLI = "dist/src/cli/main.js";

/** Every input file (relative paths, sorted). */
export function inputFiles(root) {
  const files = [];
  // By hand, not readdirSync's `recursive`: early Node 20 releases got its entries' paths wrong.
  const walk = (relative) => {
    if (!statSync(join(root, relative), { throwIfNoEntry: false })?.isDirectory()) {
      files.push(relative);
      return;
    }
    for (const name of readdirSync(join(root, relative))) walk(join(relative, name));
  };
  for (const input of INPUTS) walk(input);
  return files.sort();
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** Size, mtime and content hash of every input, as the manifest records them. */
export function fingerprint(root) {
  const files = {};
  for (const file of inputFiles(root)) {
    const path = join(root, file);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat) files[file] = { size: stat.size, mtimeMs: stat.mtimeMs, sha256: sha256(path) };
  }
  return files;
}

/**
 * "fresh" when dist/ was built from exactly the inputs on disk (or none of them is there: a packaged
 * install), "stale" when it was built from others, "missing" when there is no successful build. Unchanged mtimes are trusted (a stat per file); a
 * changed mtime falls back to the content hash, because `npm run generate` rewrites gen/ts with the
 * same content.
 */
export function distState(root) {
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(join(root, MANIFEST), "utf8")).files;
  } catch {
    return "missing";
  }
  if (!statSync(join(root, DIST_CLI), { throwIfNoEntry: false })) return "missing";
  // A packaged install (the container image): dist/ alone, built where its sources were.
  if (INPUTS.every((input) => !statSync(join(root, input), { throwIfNoEntry: false }))) return "fresh";
  const files = inputFiles(root);
  if (files.length !== Object.keys(recorded).length) return "stale";
  const same = files.every((file) => {
    const was = recorded[file];
    const path = join(root, file);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!was || !stat || stat.size !== was.size) return false;
    return stat.mtimeMs === was.mtimeMs || sha256(path) === was.sha256;
  });
  return same ? "fresh" : "stale";
}
