import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, posix, relative, resolve, sep } from "node:path";
import { kindOf, type PackFile, type PackLimits, type PackProblem } from "./pack.ts";

/** Reading a pack's skill files, inline or from a server folder, within the pack limits. */

/** C0 controls other than tab/newline/form feed/carriage return, or U+FFFD from a failed decode. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is how binary files are detected
const BINARY_CHARS = /[\u0000-\u0008\u000B\u000E-\u001F\uFFFD]/;

const BINARY_FILE = "file is binary (control characters or invalid UTF-8); expected text";

function isBinaryText(text: string): boolean {
  return BINARY_CHARS.test(text);
}

/** Validates inline file paths: relative, `/`-separated, no traversal. */
function checkInlinePath(path: string): string | undefined {
  if (path.length === 0) return "path is empty";
  if (path.length > 512) return "path is longer than 512 characters";
  if (path.includes("\u0000")) return "path contains a NUL character";
  if (path.includes("\\")) return "path must use '/' separators";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "path must be relative to the pack root";
  if (path.split("/").some((segment) => segment === "..")) return "path traversal ('..') is not allowed";
  return undefined;
}

export function readInlineFiles(
  files: readonly PackFile[],
  limits: PackLimits,
  problems: PackProblem[],
): PackFile[] {
  if (files.length > limits.maxFiles) {
    problems.push({
      file: "(pack)",
      reason: `pack has ${files.length} files; the limit is ${limits.maxFiles}`,
    });
    return [];
  }
  const out: PackFile[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const file of files) {
    const pathProblem = checkInlinePath(file.path);
    if (pathProblem) {
      problems.push({ file: JSON.stringify(file.path).slice(0, 200), reason: pathProblem });
      continue;
    }
    const path = posix.normalize(file.path);
    if (seen.has(path)) {
      problems.push({ file: path, reason: "the same path appears twice in the pack" });
      continue;
    }
    seen.add(path);
    if (!kindOf(path)) continue;
    const bytes = Buffer.byteLength(file.content, "utf8");
    total += bytes;
    if (bytes > limits.maxFileBytes) {
      problems.push({
        file: path,
        reason: `file is ${bytes} bytes; the limit is ${limits.maxFileBytes} bytes`,
      });
      continue;
    }
    if (isBinaryText(file.content)) {
      problems.push({
        file: path,
        reason: BINARY_FILE,
      });
      continue;
    }
    out.push({ path, content: file.content });
  }
  if (total > limits.maxPackBytes)
    problems.push({
      file: "(pack)",
      reason: `pack is ${total} bytes; the limit is ${limits.maxPackBytes} bytes`,
    });
  return out;
}

function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Resolves a server-side pack path against the allowed roots. Relative paths resolve against the first
 * root; the real path (symlinks resolved) must lie inside one of the roots.
 */
export function resolvePackDir(path: string, roots: readonly string[]): { dir?: string; error?: string } {
  if (path.length === 0 || path.includes("\u0000")) return { error: "pack path is empty or invalid" };
  const base = roots[0] ?? process.cwd();
  let real: string;
  try {
    real = realpathSync(resolve(base, path));
  } catch {
    return { error: `pack folder ${JSON.stringify(path)} does not exist` };
  }
  const realRoots = roots.map((root) => {
    try {
      return realpathSync(root);
    } catch {
      return resolve(root);
    }
  });
  if (!realRoots.some((root) => isInside(root, real)))
    return { error: `pack folder ${JSON.stringify(path)} is outside the allowed pack roots` };
  if (!statSync(real).isDirectory()) return { error: `pack path ${JSON.stringify(path)} is not a folder` };
  return { dir: real };
}

const SKIPPED_DIRS = new Set(["node_modules", ".git"]);

export function readPackFolder(dir: string, limits: PackLimits, problems: PackProblem[]): PackFile[] {
  const out: PackFile[] = [];
  const visited = new Set<string>([dir]);
  let total = 0;
  let fileCount = 0;
  const decoder = new TextDecoder("utf-8", { fatal: true });

  const readOne = (abs: string, rel: string, size: number) => {
    fileCount++;
    if (fileCount > limits.maxFiles) {
      if (fileCount === limits.maxFiles + 1)
        problems.push({ file: "(pack)", reason: `pack has more than ${limits.maxFiles} skill files` });
      return;
    }
    if (size > limits.maxFileBytes) {
      problems.push({
        file: rel,
        reason: `file is ${size} bytes; the limit is ${limits.maxFileBytes} bytes`,
      });
      return;
    }
    total += size;
    if (total > limits.maxPackBytes) {
      if (total - size <= limits.maxPackBytes)
        problems.push({ file: "(pack)", reason: `pack is larger than ${limits.maxPackBytes} bytes` });
      return;
    }
    const bytes = readFileSync(abs);
    let text: string;
    try {
      if (bytes.includes(0)) throw new Error("NUL byte");
      text = decoder.decode(bytes);
    } catch {
      problems.push({
        file: rel,
        reason: BINARY_FILE,
      });
      return;
    }
    if (isBinaryText(text)) {
      problems.push({
        file: rel,
        reason: BINARY_FILE,
      });
      return;
    }
    out.push({ path: rel, content: text });
  };

  const walk = (absDir: string, relDir: string, depth: number) => {
    if (depth > 16) {
      problems.push({ file: relDir, reason: "folder nesting is deeper than 16 levels" });
      return;
    }
    const entries = readdirSync(absDir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      if (entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name)) continue;
      const abs = join(absDir, entry.name);
      const rel = relDir === "" ? entry.name : `${relDir}/${entry.name}`;
      let target = abs;
      if (lstatSync(abs).isSymbolicLink()) {
        try {
          target = realpathSync(abs);
        } catch {
          problems.push({ file: rel, reason: "symlink target does not exist" });
          continue;
        }
        if (!isInside(dir, target)) {
          problems.push({ file: rel, reason: "symlink points outside the pack folder" });
          continue;
        }
      }
      const stat = statSync(target);
      if (stat.isDirectory()) {
        if (visited.has(target)) continue;
        visited.add(target);
        walk(target, rel, depth + 1);
      } else if (stat.isFile() && kindOf(rel)) {
        readOne(target, rel, stat.size);
      }
    }
  };
  walk(dir, "", 0);
  return out.map((file) => ({ path: file.path.split(sep).join("/"), content: file.content }));
}
