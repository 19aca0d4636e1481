import { readFileSync } from "node:fs";
import { checkoutPath } from "../checkout.ts";

/**
 * Common English words: the whole words (three letters or more) of the shipped model's vocabulary,
 * some 21,000 words and names the model was trained to know. Typo repair leaves them alone: "feat" is
 * a word the catalog merely lacks, not a slip for "fear". Empty if the folder is gone (repair then
 * judges by the catalog alone).
 */
export function englishWords(): ReadonlySet<string> {
  words ??= readWords();
  return words;
}

let words: ReadonlySet<string> | undefined;

function readWords(): ReadonlySet<string> {
  try {
    const tokenizer = JSON.parse(readFileSync(checkoutPath(VOCABULARY_FILE), "utf8")) as {
      model?: { vocab?: Record<string, number> };
    };
    return new Set(Object.keys(tokenizer.model?.vocab ?? {}).filter((word) => /^[a-z]{3,}$/.test(word)));
  } catch {
    return new Set();
  }
}

const VOCABULARY_FILE = "models/all-MiniLM-L6-v2/tokenizer.json";
