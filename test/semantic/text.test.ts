import { describe, expect, it } from "vitest";
import { toolEmbeddingText } from "../../src/semantic/text.ts";

describe("toolEmbeddingText", () => {
  it("splits snake_case, camelCase, kebab-case and dotted names into words before the description", () => {
    expect(toolEmbeddingText("github.create_pullRequest-v2", "Opens a pull request.")).toBe(
      "github create pull Request v2: Opens a pull request.",
    );
  });

  it("keeps an acronym whole before a capitalised word", () => {
    expect(toolEmbeddingText("parseHTMLPage", "")).toBe("parse HTML Page");
  });
});
