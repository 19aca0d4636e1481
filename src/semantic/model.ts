import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { InferenceSession, Tensor } from "onnxruntime-node";
import { DEFAULT_CALIBRATION, parseCalibration, type ScoreCalibration } from "./calibration.ts";

/** The files of a sentence-embedding model folder (the all-MiniLM-L6-v2 layout), relative to it. */
const MODEL_FILES = {
  onnx: "onnx/model_quantized.onnx",
  tokenizer: "tokenizer.json",
  tokenizerConfig: "tokenizer_config.json",
  config: "config.json",
} as const;

/** The folder's optional score calibration (calibration.ts); without it, DEFAULT_CALIBRATION. */
const CALIBRATION_FILE = "calibration.json";

/** A model folder that cannot be used; the message names the file and what is wrong with it. */
class ModelFolderError extends Error {
  override readonly name = "ModelFolderError";
}

/**
 * Text past this many characters per kept word piece is cut before tokenizing, which bounds the
 * tokenizer's work on a huge query. WordPiece splits words of at most 100 characters, so only runs of
 * whitespace or words longer than that could push a kept piece past the cut.
 */
const CHARS_PER_TOKEN_BOUND = 100;

interface TokenizerSettings {
  readonly maxTokens: number;
  readonly clsId: number;
  readonly sepId: number;
  readonly padId: number;
}

export interface EncodedText {
  readonly ids: readonly number[];
}

/** Loaded model: tokenizer, ONNX session and what the model says about itself. */
export class SentenceModel {
  private constructor(
    /** `<folder name>@<first 16 hex of the ONNX file's sha256>`: a changed file is a new model. */
    readonly id: string,
    readonly dims: number,
    private readonly tokenizer: Tokenizer,
    private readonly settings: TokenizerSettings,
    private readonly session: InferenceSession,
    private readonly needsTokenTypes: boolean,
    /**
     * Whether texts may share an inference (see batchInvariant); when not, each is embedded alone, so a
     * text's vector never depends on what it was embedded beside.
     */
    readonly batchable: boolean,
    /** How this model's cosines become scores (the folder's calibration.json, else the default). */
    readonly calibration: ScoreCalibration,
    /** The vocabulary's tokens in id order: request repair reads its whole words as the model's words. */
    readonly words: readonly string[],
  ) {}

  static async load(dir: string, threads = 1): Promise<SentenceModel> {
    const onnxPath = requireFile(dir, MODEL_FILES.onnx);
    const tokenizerJson = readJsonObject(dir, MODEL_FILES.tokenizer);
    const tokenizerConfig = readJsonObject(dir, MODEL_FILES.tokenizerConfig);
    const config = readJsonObject(dir, MODEL_FILES.config);
    let tokenizer: Tokenizer;
    try {
      tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    } catch (err) {
      throw new ModelFolderError(
        `${join(dir, MODEL_FILES.tokenizer)}: not a usable tokenizer (${message(err)})`,
      );
    }
    const settings = tokenizerSettings(dir, tokenizer, tokenizerConfig, config);
    const calibration = readCalibration(dir);
    const words = vocabularyTokens(tokenizerJson);
    let session: InferenceSession;
    try {
      session = await InferenceSession.create(onnxPath, {
        // Inference is the only work of its worker thread; `threads` is config tool_search.semantic.threads.
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: "sequential",
        // The extended level's MatMulIntegerToFloat fusion assumes one activation scale per tensor and
        // would compute a per-token quantized graph (training/per_token.py) wrongly; the basic level is
        // as fast for these graphs.
        graphOptimizationLevel: "basic",
        // The arena would keep the largest inference's buffers for good; without it, memory follows
        // the texts at hand, at the same speed.
        enableCpuMemArena: false,
        // Threads wait for work asleep, not spinning: a spinning thread takes a core from the server's
        // event loop whenever it is not inferring.
        extra: { session: { "intra_op.allow_spinning": "0" } },
      });
    } catch (err) {
      throw new ModelFolderError(`${onnxPath}: not a loadable ONNX model (${message(err)})`);
    }
    for (const input of ["input_ids", "attention_mask"])
      if (!session.inputNames.includes(input))
        throw new ModelFolderError(
          `${onnxPath}: the graph has no input "${input}" (has ${session.inputNames.join(", ")})`,
        );
    if (!session.outputNames.includes(OUTPUT))
      throw new ModelFolderError(
        `${onnxPath}: the graph has no output "${OUTPUT}" (has ${session.outputNames.join(", ")})`,
      );
    const id = `${basename(dir)}@${createHash("sha256").update(readFileSync(onnxPath)).digest("hex").slice(0, 16)}`;
    const needsTokenTypes = session.inputNames.includes("token_type_ids");
    const probe = new SentenceModel(
      id,
      0,
      tokenizer,
      settings,
      session,
      needsTokenTypes,
      false,
      calibration,
      words,
    );
    // The dimension is the model's, read from one real inference rather than trusted from config.json.
    const empty = probe.encode("");
    const dims = (await probe.hiddenStates([empty], empty.ids.length)).dims;
    const sized = new SentenceModel(
      id,
      dims,
      tokenizer,
      settings,
      session,
      needsTokenTypes,
      false,
      calibration,
      words,
    );
    return new SentenceModel(
      id,
      dims,
      tokenizer,
      settings,
      session,
      needsTokenTypes,
      await sized.batchInvariant(),
      calibration,
      words,
    );
  }

  /**
   * Whether a text's vector is the same alone and beside others, padded: true for float graphs and
   * graphs quantized per token (training/per_token.py), false for graphs that quantize each activation
   * tensor as a whole (a batch's longest or loudest text then changes every other text's vector). Told
   * by embedding two texts alone and then together, padded further.
   */
  private async batchInvariant(): Promise<boolean> {
    const probes = [this.encode("search the web for a query"), this.encode("ok")];
    const alone: Float32Array[] = [];
    for (const e of probes) alone.push(await this.embedEncoded([e], e.ids.length));
    const together = await this.embedEncoded(probes, 2 * MIN_PADDED_LENGTH);
    return alone.every((vector, row) => vector.every((x, d) => x === together[row * this.dims + d]));
  }

  /** Word pieces of `text`, cut to fit with `[CLS]` and the final `[SEP]` kept (as sentence-transformers does). */
  encode(text: string): EncodedText {
    const { maxTokens, clsId, sepId } = this.settings;
    const bounded = text.slice(0, maxTokens * CHARS_PER_TOKEN_BOUND);
    const pieces = this.tokenizer.encode(bounded, { add_special_tokens: false }).ids;
    return { ids: [clsId, ...pieces.slice(0, maxTokens - 2), sepId] };
  }

  /** The token length `encoded` texts are padded to: the least of a few fixed lengths that holds them. */
  paddedLength(longest: number): number {
    let length = MIN_PADDED_LENGTH;
    while (length < longest) length *= 2;
    return Math.min(length, Math.max(longest, this.settings.maxTokens));
  }

  /**
   * Mean-pooled, L2-normalised sentence vectors of texts already encoded, packed one after another,
   * in one inference padded to `length` tokens.
   */
  async embedEncoded(encoded: readonly EncodedText[], length: number): Promise<Float32Array> {
    const { hidden, dims } = await this.hiddenStates(encoded, length);
    const out = new Float32Array(encoded.length * dims);
    encoded.forEach((e, row) => {
      const vector = out.subarray(row * dims, (row + 1) * dims);
      // Padding is at the end, so the attention mask is 1 exactly for the first ids.length positions.
      for (let t = 0; t < e.ids.length; t++) {
        const base = (row * length + t) * dims;
        for (let d = 0; d < dims; d++) vector[d] = (vector[d] ?? 0) + (hidden[base + d] ?? 0);
      }
      normalise(vector);
    });
    return out;
  }

  async release(): Promise<void> {
    await this.session.release();
  }

  private async hiddenStates(
    encoded: readonly EncodedText[],
    length: number,
  ): Promise<{ hidden: Float32Array; dims: number }> {
    const size = encoded.length * length;
    const ids = new BigInt64Array(size).fill(BigInt(this.settings.padId));
    const mask = new BigInt64Array(size);
    encoded.forEach((e, row) => {
      e.ids.forEach((id, t) => {
        ids[row * length + t] = BigInt(id);
        mask[row * length + t] = 1n;
      });
    });
    const shape = [encoded.length, length];
    const feeds: Record<string, Tensor> = {
      input_ids: new Tensor("int64", ids, shape),
      attention_mask: new Tensor("int64", mask, shape),
    };
    if (this.needsTokenTypes) feeds.token_type_ids = new Tensor("int64", new BigInt64Array(size), shape);
    const result = await this.session.run(feeds);
    const output = result[OUTPUT];
    const dims = output?.dims[2];
    if (output === undefined || !(output.data instanceof Float32Array) || output.dims.length !== 3 || !dims)
      throw new ModelFolderError(`the model's "${OUTPUT}" is not a float32 [batch, tokens, dims] tensor`);
    return { hidden: output.data, dims };
  }
}

const OUTPUT = "last_hidden_state";
/**
 * The shortest padded length. Inferences are padded to a few fixed lengths (16, 32, 64, …, the
 * model's maximum), so their buffers come in a few sizes that the allocator reuses rather than
 * fragmenting memory with a new size per text.
 */
const MIN_PADDED_LENGTH = 16;

function normalise(vector: Float32Array): void {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let d = 0; d < vector.length; d++) vector[d] = (vector[d] ?? 0) / norm;
}

function requireFile(dir: string, file: string): string {
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

function readJsonObject(dir: string, file: string): Record<string, unknown> {
  const path = requireFile(dir, file);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ModelFolderError(`${path}: not valid JSON (${message(err)})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ModelFolderError(`${path}: expected a JSON object`);
  return value as Record<string, unknown>;
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

function readCalibration(dir: string): ScoreCalibration {
  let present = false;
  try {
    present = statSync(join(dir, CALIBRATION_FILE)).isFile();
  } catch {
    return DEFAULT_CALIBRATION;
  }
  if (!present) throw new ModelFolderError(`${join(dir, CALIBRATION_FILE)}: not a file`);
  const parsed = parseCalibration(readJsonObject(dir, CALIBRATION_FILE));
  if (typeof parsed === "string") throw new ModelFolderError(`${join(dir, CALIBRATION_FILE)}: ${parsed}`);
  return parsed;
}

function tokenizerSettings(
  dir: string,
  tokenizer: Tokenizer,
  tokenizerConfig: Record<string, unknown>,
  config: Record<string, unknown>,
): TokenizerSettings {
  const tokenId = (key: string, fallback: string): number => {
    const token = typeof tokenizerConfig[key] === "string" ? tokenizerConfig[key] : fallback;
    const id = tokenizer.token_to_id(token);
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

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
