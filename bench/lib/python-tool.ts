import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./grpc-bench-support.ts";

const run = promisify(execFile);

/**
 * The venv .tools/<name> with `requirement` (e.g. "mcp-proxy==0.13.0") installed from PyPI, made
 * with the machine's python3 and pip on first use (and again when the requirement changes);
 * returns the venv's directory.
 */
export async function pythonTool(name: string, requirement: string): Promise<string> {
  const venv = join(ROOT, ".tools", name);
  const stamp = join(venv, ".installed");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === requirement) return venv;
  process.stderr.write(`installing ${requirement} into ${venv} (first time only)\n`);
  await run("python3", ["-m", "venv", venv]);
  await run(
    join(venv, "bin/python"),
    ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  writeFileSync(stamp, requirement);
  return venv;
}
