import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkoutPath } from "../../src/checkout.ts";
import { ConfigError, loadConfig } from "../../src/config/index.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-config-semantic-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function load(yaml: string) {
  const file = join(dir, "wayfind.yaml");
  writeFileSync(file, yaml);
  return loadConfig(file, {});
}

function problemsOf(yaml: string): readonly string[] {
  try {
    load(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error("expected the config to be rejected");
}

describe("tool_search.semantic", () => {
  it("is on with the model shipped in the repository when the section is absent", () => {
    expect(load("tool_search:\n  enabled: true\n").toolSearch.semantic).toEqual({
      enabled: true,
      modelDir: checkoutPath("models/all-MiniLM-L6-v2"),
      weight: 0.3,
      threads: availableParallelism(),
      maxWaitMs: 40,
    });
  });

  it("turns off with enabled: false alone", () => {
    expect(load("tool_search:\n  semantic:\n    enabled: false\n").toolSearch.semantic.enabled).toBe(false);
  });

  it("resolves model_dir against the config file's folder and defaults the rest", () => {
    expect(load("tool_search:\n  semantic:\n    model_dir: models/minilm\n").toolSearch.semantic).toEqual({
      enabled: true,
      modelDir: join(dir, "models/minilm"),
      weight: 0.3,
      // Every core for inference, and a wait a search never exceeds for its request's meaning.
      threads: availableParallelism(),
      maxWaitMs: 40,
    });
  });

  it("takes every key as written", () => {
    const semantic = load(
      "tool_search:\n  semantic:\n    model_dir: /m\n    enabled: false\n    weight: 0.3\n    threads: 3\n    max_wait_ms: 0\n",
    ).toolSearch.semantic;
    expect(semantic).toEqual({ enabled: false, modelDir: "/m", weight: 0.3, threads: 3, maxWaitMs: 0 });
  });

  it.each([
    ["threads: 0", "threads"],
    ["threads: 1.5", "threads"],
    ["max_wait_ms: -1", "max_wait_ms"],
    ["max_wait_ms: 60001", "max_wait_ms"],
  ])("rejects %s, naming the key", (line, key) => {
    const problems = problemsOf(`tool_search:\n  semantic:\n    ${line}\n`);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`tool_search\\.semantic\\.${key}`));
  });

  it("rejects a weight outside [0, 1]", () => {
    const problems = problemsOf("tool_search:\n  semantic:\n    model_dir: /m\n    weight: 1.5\n");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/tool_search\.semantic\.weight/);
  });

  it("uses the shipped model when the section leaves model_dir out", () => {
    expect(load("tool_search:\n  semantic:\n    weight: 0.5\n").toolSearch.semantic.modelDir).toBe(
      checkoutPath("models/all-MiniLM-L6-v2"),
    );
  });

  it("rejects an unknown key in the section", () => {
    expect(problemsOf("tool_search:\n  semantic:\n    model_dir: /m\n    modle: x\n")[0]).toMatch(
      /modle: unknown key/,
    );
  });
});
