import { describe, expect, it } from "vitest";
import { ModelWords } from "../../src/search/model-words.ts";

/** A vocabulary in a tokenizer's order: special tokens and pieces first, common words before rare. */
const VOCABULARY = [
  "[PAD]",
  "[CLS]",
  "the",
  "##s",
  "##bre",
  "weather",
  "whether",
  "tomorrow",
  "receive",
  "restaurant",
  "temperature",
  "python",
  "slack",
  "umbrella",
  "umbrellas",
  "forecast",
  "docked",
  "reds",
  "jia",
  "postures",
];

describe("ModelWords: a request's slips repaired against the model's whole words", () => {
  const words = new ModelWords(VOCABULARY);

  it("reads only whole words of three letters or more, not special tokens or word pieces", () => {
    expect(words.size).toBe(VOCABULARY.length - 4);
    expect(words.has("bre")).toBe(false);
    expect(words.has("umbrella")).toBe(true);
  });

  it("repairs the typing slips people make: swapped neighbours, a doubled letter, a dropped one in a long word", () => {
    expect(words.repair("weahter")).toBe("weather");
    expect(words.repair("slakc")).toBe("slack");
    expect(words.repair("pyhton")).toBe("python");
    expect(words.repair("tomorow")).toBe("tomorrow");
    expect(words.repair("restaurnt")).toBe("restaurant");
    expect(words.repair("temprature")).toBe("temperature");
  });

  it("completes a word cut short with the commonest word it begins", () => {
    expect(words.repair("umbrel")).toBe("umbrella");
    expect(words.repair("tomorr")).toBe("tomorrow");
  });

  it("leaves a word of the model alone, and short words and names it does not know", () => {
    expect(words.repair("weather")).toBeUndefined();
    expect(words.repair("the")).toBeUndefined();
    // One plain slip from a word of the model, but names: never read as that word.
    expect(words.repair("docker")).toBeUndefined();
    expect(words.repair("redis")).toBeUndefined();
    expect(words.repair("jira")).toBeUndefined();
    expect(words.repair("postgres")).toBeUndefined();
    // A cut too short to tell, or a word too far from any.
    expect(words.repair("umbr")).toBeUndefined();
    expect(words.repair("kubectl")).toBeUndefined();
  });

  it("is empty for a vocabulary without whole words (a tokenizer of another kind)", () => {
    const none = new ModelWords([]);
    expect(none.size).toBe(0);
    expect(none.repair("umbrel")).toBeUndefined();
  });
});
