import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The image's build context admits only what .dockerignore lets through; a file the Dockerfile copies
 * but the context leaves out fails the build far later (in the image step). Checked here in a blink.
 */

const ROOT = join(import.meta.dirname, "..", "..");

/** Paths the Dockerfile copies from the build context (not from an earlier stage). */
function copiedFromContext(dockerfile: string): string[] {
  const paths: string[] = [];
  for (const line of dockerfile.split("\n")) {
    const words = line.trim().split(/\s+/);
    if (words[0] !== "COPY" || words.some((word) => word.startsWith("--from"))) continue;
    const sources = words.slice(1).filter((word) => !word.startsWith("--"));
    paths.push(...sources.slice(0, -1));
  }
  return paths;
}

/** The context's admitted paths: .dockerignore leaves out everything, then admits each `!path`. */
function admitted(dockerignore: string): string[] {
  const lines = dockerignore.split("\n").map((line) => line.trim());
  expect(lines.filter((line) => line && !line.startsWith("#"))[0]).toBe("*");
  return lines.filter((line) => line.startsWith("!")).map((line) => line.slice(1));
}

describe("the image's build context", () => {
  it("admits every file and folder the Dockerfile copies from it", () => {
    const copied = copiedFromContext(readFileSync(join(ROOT, "Dockerfile"), "utf8"));
    const allowed = admitted(readFileSync(join(ROOT, ".dockerignore"), "utf8"));
    expect(copied.length).toBeGreaterThan(5);
    const left = copied.filter(
      (path) => !allowed.some((entry) => path === entry || (entry.endsWith("/") && path.startsWith(entry))),
    );
    expect(left).toEqual([]);
  });
});
