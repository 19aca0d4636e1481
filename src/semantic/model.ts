import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { InferenceSession, Tensor } from "onnxruntime-node";
import type { ScoreCalibration } from "./calibration.ts";
import {
  errorMessage,
  MODEL_FILES,
  ModelFolderError,
  readCalibration,
  readTokenSettings,
  requireFile,
  type TokenizerSettings,
} from "./model-folder.ts";

/** The folder's optional score calibration (calibration.ts); without it, DEFAULT_CALIBRATION. */
const CALIBRATION_FILE = "calibration.json";

export interface EncodedText {
  readonly ids: readonly number[];
}

/**
 * Word pieces of two texts, one long and one short (tokenized by the caller): what a model is probed
 * with at load, to tell whether its vectors depend on their batch.
 */
export type BatchProbes = readonly [readonly number[], readonly number[]];

/** Loaded model: the ONNX session, its special tokens, and what the model says about itself. */
/** What a loaded model is made of (SentenceModel.load). */
interface ModelParts {
  readonly id: string;
  readonly sha256: string;
  readonly dims: number;
  readonly tokens: TokenizerSettings;
  readonly session: InferenceSession;
  readonly needsTokenTypes: boolean;
  readonly batchable: boolean;
  readonly calibration: ScoreCalibration;
}

export class SentenceModel {
  /** `<folder name>@<first 16 hex of the ONNX file's sha256>`: a changed file is a new model. */
  readonly id: string;
  /** The ONNX file's sha256 (hex): what a static tier distilled from this model names (static-tier.ts). */
  readonly sha256: string;
  readonly dims: number;
  /**
   * Whether texts may share an inference (see batchInvariant); when not, each is embedded alone, so a
   * text's vector never depends on what it was embedded beside.
   */
  readonly batchable: boolean;
  /** How this model's cosines become scores (the folder's calibration.json, else the default). */
  readonly calibration: ScoreCalibration;
  private readonly tokens: TokenizerSettings;
  private readonly session: InferenceSession;
  private readonly needsTokenTypes: boolean;

  private constructor(parts: ModelParts) {
    this.id = parts.id;
    this.sha256 = parts.sha256;
    this.dims = parts.dims;
    this.batchable = parts.batchable;
    this.calibration = parts.calibration;
    this.tokens = parts.tokens;
    this.session = parts.session;
    this.needsTokenTypes = parts.needsTokenTypes;
  }

  /** `probes`: see batchInvariant. */
  static async load(dir: string, threads: number, probes: BatchProbes): Promise<SentenceModel> {
    const onnxPath = requireFile(dir, MODEL_FILES.onnx);
    const tokens = readTokenSettings(dir);
    const calibration = readCalibration(dir, CALIBRATION_FILE);
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
      throw new ModelFolderError(`${onnxPath}: not a loadable ONNX model (${errorMessage(err)})`);
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
    const sha256 = createHash("sha256").update(readFileSync(onnxPath)).digest("hex");
    const id = `${basename(dir)}@${sha256.slice(0, 16)}`;
    const needsTokenTypes = session.inputNames.includes("token_type_ids");
    const parts = { id, sha256, dims: 0, tokens, session, needsTokenTypes, batchable: false, calibration };
    const probe = new SentenceModel(parts);
    // The dimension is the model's, read from one real inference rather than trusted from config.json.
    const empty = probe.encode([]);
    const dims = (await probe.hiddenStates([empty], empty.ids.length)).dims;
    const batchable = await new SentenceModel({ ...parts, dims }).batchInvariant(probes);
    return new SentenceModel({ ...parts, dims, batchable });
  }

  /**
   * Whether a text's vector is the same alone and beside others, padded: true for float graphs and
   * graphs quantized per token (training/per_token.py), false for graphs that quantize each activation
   * tensor as a whole (a batch's longest or loudest text then changes every other text's vector). Told
   * by embedding two texts alone and then together, padded further.
   */
  private async batchInvariant(pieces: BatchProbes): Promise<boolean> {
    const probes = pieces.map((p) => this.encode(p));
    const alone: Float32Array[] = [];
    for (const e of probes) alone.push(await this.embedEncoded([e], e.ids.length));
    const together = await this.embedEncoded(probes, 2 * MIN_PADDED_LENGTH);
    return alone.every((vector, row) => vector.every((x, d) => x === together[row * this.dims + d]));
  }

  /** A text's word pieces (cut to fit: FolderTokenizer.pieces) between `[CLS]` and `[SEP]`. */
  encode(pieces: readonly number[]): EncodedText {
    const { clsId, sepId, maxTokens } = this.tokens;
    return { ids: [clsId, ...pieces.slice(0, maxTokens - 2), sepId] };
  }

  /** The token length `encoded` texts are padded to: the least of a few fixed lengths that holds them. */
  paddedLength(longest: number): number {
    return paddedLength(longest, this.tokens.maxTokens);
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
    const ids = new BigInt64Array(size).fill(BigInt(this.tokens.padId));
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

/** The padded length of an inference whose longest text has `longest` tokens (its [CLS] and [SEP] included). */
export function paddedLength(longest: number, maxTokens: number): number {
  let length = MIN_PADDED_LENGTH;
  while (length < longest) length *= 2;
  return Math.min(length, Math.max(longest, maxTokens));
}

function normalise(vector: Float32Array): void {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let d = 0; d < vector.length; d++) vector[d] = (vector[d] ?? 0) / norm;
}
