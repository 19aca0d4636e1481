// better-sqlite3 is the one native module compiled at install (onnxruntime-node ships its binaries).
// npm compiles it against the headers its `nodedir` setting names, which on some machines belong to
// another Node than the one running npm: the install then succeeds and the server dies at its first
// database with Node's raw NODE_MODULE_VERSION error. Plain JavaScript: bin/wayfind.js asks before
// any TypeScript runs.
//
//   node scripts/native.js      (npm's `prepare`) rebuilds it against this Node's own headers when it
//                               was compiled for another Node; fails with what to do when it cannot
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The folder holding this Node's own headers (`include/node/node.h`), as Node's release archives do. */
function ownNodeDir() {
  const dir = join(dirname(process.execPath), "..");
  return existsSync(join(dir, "include", "node", "node.h")) ? dir : undefined;
}

function rebuildAdvice() {
  const dir = ownNodeDir();
  const nodedir = dir ?? "<a folder with this Node's include/node, e.g. $(bash scripts/node-from-npm.sh)>";
  return `npm_config_nodedir=${nodedir} npm rebuild better-sqlite3`;
}

/**
 * Why this Node cannot load better-sqlite3, with what to do, or undefined when it can. `compiledFor`
 * is set when the module was compiled for another Node (the one case a rebuild mends).
 */
export function nativeModuleProblem(root) {
  const require = createRequire(join(root, "package.json"));
  try {
    const Database = require("better-sqlite3");
    new Database(":memory:").close();
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const compiledFor = /NODE_MODULE_VERSION (\d+)/.exec(message)?.[1];
    if (compiledFor === undefined)
      return { message: `better-sqlite3 cannot be loaded (${message.split("\n")[0]}): run npm ci` };
    return {
      compiledFor,
      message:
        `better-sqlite3 was compiled for another Node.js (NODE_MODULE_VERSION ${compiledFor}) than this ` +
        `one (${process.version}, NODE_MODULE_VERSION ${process.versions.modules}): npm compiles it ` +
        `against the headers its nodedir setting names, which may be another Node's. Rebuild it against ` +
        `this Node's:\n  ${rebuildAdvice()}`,
    };
  }
}

/** `prepare`: mends a module compiled for another Node, or fails the install saying how. */
function repair(root) {
  const problem = nativeModuleProblem(root);
  if (problem === undefined) return 0;
  const dir = ownNodeDir();
  if (problem.compiledFor === undefined || dir === undefined) {
    process.stderr.write(`wayfind install: ${problem.message}\n`);
    return 1;
  }
  process.stderr.write(
    `wayfind install: better-sqlite3 was compiled for another Node.js (NODE_MODULE_VERSION ${problem.compiledFor}); ` +
      `rebuilding it against this Node's own headers (${dir})\n`,
  );
  const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ["npm", []];
  const rebuilt = spawnSync(npm[0], [...npm[1], "rebuild", "better-sqlite3"], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, npm_config_nodedir: dir },
  });
  if (rebuilt.status !== 0) return 1;
  // A fresh process: this one already failed to load the old binary.
  const check = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--check"], {
    cwd: root,
    stdio: "inherit",
  });
  return check.status ?? 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  if (process.argv[2] === "--check") {
    const problem = nativeModuleProblem(root);
    if (problem !== undefined) process.stderr.write(`wayfind install: ${problem.message}\n`);
    process.exitCode = problem === undefined ? 0 : 1;
  } else process.exitCode = repair(root);
}
