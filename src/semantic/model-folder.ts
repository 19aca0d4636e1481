// Reading a sentence-embedding model folder (the all-MiniLM-L6-v2 layout): its files, its tokenizer
// and how a text becomes word pieces. Texts are tokenized on the main thread only (the Embedder, the
// static tier); the worker's SentenceModel reads the special tokens' ids and is handed word pieces.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { LruCache } from "../lru.ts";
import { DEFAULT_CALIBRATION, parseCalibration, type ScoreCalibration } from "./calibration.ts";

/** The files of a model folder, relative to it. */
export const MODEL_FILES = {
  onnx: "onnx/model_quantized.onnx",
  tokenizer: "tokenizer.json",
  tokenizerConfig: "tokenizer_config.json",
  config: "config.json",
} as const;

/** A model folder that cannot be used; the message names the file and what is wrong with it. */
export class ModelFolderError extends Error {
  override readonly name = "ModelFolderError";
}

/**
 * Text past this many characters per kept word piece is cut before tokenizing, which bounds the
 * tokenizer's work on a huge query. WordPiece splits words of at most 100 characters, so only runs of
 * whitespace or words longer than that could push a kept piece past the cut.
 */
const CHARS_PER_TOKEN_BOUND = 100;

export interface TokenizerSettings {
  readonly maxTokens: number;
  readonly clsId: number;
  readonly sepId: number;
  readonly padId: number;
}

/** A folder's tokenizer with its settings, and the vocabulary's tokens in id order. */
export interface FolderTokenizer {
  readonly settings: TokenizerSettings;
  /** The vocabulary's tokens in id order (WordPiece; empty for other tokenizer models). */
  readonly words: readonly string[];
  /**
   * Word pieces of `text` without [CLS]/[SEP], cut so that both still fit the model's length; kept for
   * the next time unless `keep` is false (a catalog's texts are tokenized once).
   */
  pieces(text: string, keep?: boolean): readonly number[];
}

/**
 * The folder's tokenizer. `remember`: how many texts' pieces are kept, least recently used out — a
 * search asks a text's length (for the model's pace) and then its pieces (for the static tier).
 */
export function readTokenizer(dir: string, remember = 0): FolderTokenizer {
  const { tokenizerJson, tokenizerConfig, settings } = readFolderSettings(dir);
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
  } catch (err) {
    throw new ModelFolderError(
      `${join(dir, MODEL_FILES.tokenizer)}: not a usable tokenizer (${errorMessage(err)})`,
    );
  }
  const encode = (text: string) =>
    tokenizer
      .encode(text.slice(0, settings.maxTokens * CHARS_PER_TOKEN_BOUND), { add_special_tokens: false })
      .ids.slice(0, settings.maxTokens - 2);
  const known = new LruCache<string, number[]>(remember);
  return {
    settings,
    words: vocabularyTokens(tokenizerJson),
    pieces: (text, keep = true) => {
      if (remember === 0 || !keep) return encode(text);
      const cached = known.get(text);
      if (cached !== undefined) return cached;
      const pieces = encode(text);
      known.set(text, pieces);
      return pieces;
    },
  };
}

export function requireFile(dir: string, file: string): string {
  const path = join(dir, file);
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {
    throw new ModelFolderError(
      `${path}: missing (a model folder holds ${Object.values(MODEL_FILES).join(", ")})`,
    );
  }
  if (!isFile) throw new ModelFolderError(`${path}: not a file`);
  return path;
}

export function readJsonObject(dir: string, file: string): Record<string, unknown> {
  const path = requireFile(dir, file);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ModelFolderError(`${path}: not valid JSON (${errorMessage(err)})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ModelFolderError(`${path}: expected a JSON object`);
  return value as Record<string, unknown>;
}

/** Whether `file` exists in `dir`; a path there that is not a file is an error naming it. */
export function hasFile(dir: string, file: string): boolean {
  try {
    if (statSync(join(dir, file)).isFile()) return true;
  } catch {
    return false;
  }
  throw new ModelFolderError(`${join(dir, file)}: not a file`);
}

/** The curve of `file` in `dir` (calibration.ts), or `fallback` when the folder has no such file. */
export function readCalibration(
  dir: string,
  file: string,
  fallback: ScoreCalibration = DEFAULT_CALIBRATION,
): ScoreCalibration {
  if (!hasFile(dir, file)) return fallback;
  const parsed = parseCalibration(readJsonObject(dir, file));
  if (typeof parsed === "string") throw new ModelFolderError(`${join(dir, file)}: ${parsed}`);
  return parsed;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The special tokens' ids and the model's length, as the worker needs them (no tokenizer). */
export function readTokenSettings(dir: string): TokenizerSettings {
  return readFolderSettings(dir).settings;
}

function readFolderSettings(dir: string) {
  const tokenizerJson = readJsonObject(dir, MODEL_FILES.tokenizer);
  const tokenizerConfig = readJsonObject(dir, MODEL_FILES.tokenizerConfig);
  const config = readJsonObject(dir, MODEL_FILES.config);
  const settings = tokenizerSettings(dir, tokenIds(tokenizerJson), tokenizerConfig, config);
  return { tokenizerJson, tokenizerConfig, settings };
}

/** A token's id as tokenizer.json gives it: an added token's, else the model's vocabulary's. */
function tokenIds(tokenizerJson: Record<string, unknown>): (token: string) => number | undefined {
  const ids = new Map<string, number>();
  const vocab = (tokenizerJson.model as { vocab?: unknown } | undefined)?.vocab;
  if (typeof vocab === "object" && vocab !== null && !Array.isArray(vocab))
    for (const [token, id] of Object.entries(vocab)) if (typeof id === "number") ids.set(token, id);
  const added = Array.isArray(tokenizerJson.added_tokens) ? tokenizerJson.added_tokens : [];
  for (const entry of added as { id?: unknown; content?: unknown }[])
    if (typeof entry.id === "number" && typeof entry.content === "string") ids.set(entry.content, entry.id);
  return (token) => ids.get(token);
}

/**
 * The tokens of a WordPiece vocabulary (`model.vocab`, token → id) in id order, where a request's words
 * can be found whole; empty for other tokenizer models (their pieces are no words to repair against).
 */
function vocabularyTokens(tokenizerJson: Record<string, unknown>): string[] {
  const vocab = (tokenizerJson.model as { vocab?: unknown } | undefined)?.vocab;
  if (typeof vocab !== "object" || vocab === null || Array.isArray(vocab)) return [];
  return Object.entries(vocab as Record<string, unknown>)
    .filter((entry): entry is [string, number] => typeof entry[1] === "number")
    .sort((a, b) => a[1] - b[1])
    .map(([token]) => token);
}

function tokenizerSettings(
  dir: string,
  idOf: (token: string) => number | undefined,
  tokenizerConfig: Record<string, unknown>,
  config: Record<string, unknown>,
): TokenizerSettings {
  const tokenId = (key: string, fallback: string): number => {
    const token = typeof tokenizerConfig[key] === "string" ? tokenizerConfig[key] : fallback;
    const id = idOf(token);
    if (id === undefined)
      throw new ModelFolderError(
        `${join(dir, MODEL_FILES.tokenizer)}: the vocabulary has no ${key} "${token}"`,
      );
    return id;
  };
  const positive = (value: unknown): number | undefined =>
    typeof value === "number" && Number.isInteger(value) && value > 2 ? value : undefined;
  // The tokenizer's length (the one the model was trained at) within the position table.
  const limits = [
    positive(tokenizerConfig.model_max_length),
    positive(config.max_position_embeddings),
  ].filter((n): n is number => n !== undefined);
  if (limits.length === 0)
    throw new ModelFolderError(
      `${join(dir, MODEL_FILES.tokenizerConfig)}: no model_max_length (nor max_position_embeddings in config.json)`,
    );
  return {
    maxTokens: Math.min(...limits),
    clsId: tokenId("cls_token", "[CLS]"),
    sepId: tokenId("sep_token", "[SEP]"),
    padId: tokenId("pad_token", "[PAD]"),
  };
}
