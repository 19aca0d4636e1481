// The model's static tier: a vector per word piece of its vocabulary, distilled from the model
// (training/static.py), so a request's meaning costs a sum of rows on the event loop — microseconds —
// when the model cannot embed it within the search's wait. Its vectors live in the model's space: a
// request read by the static tier is compared with the tools' vectors the model made.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ScoreCalibration } from "./calibration.ts";
import {
  type FolderTokenizer,
  hasFile,
  ModelFolderError,
  readCalibration,
  readJsonObject,
} from "./model-folder.ts";

/** The static tier's files, relative to the model folder; without `vectors`, a model has no static tier. */
const STATIC_FILES = {
  vectors: "static/vectors.bin",
  config: "static/config.json",
  calibration: "static/calibration.json",
} as const;

/** vectors.bin: MAGIC, then version, rows and dims (uint32 LE), a float32 scale per row, the int8 rows. */
const MAGIC = "WFSTATIC";
const VERSION = 1;
const HEADER_BYTES = MAGIC.length + 12;

/** What the static tier needs to know of the model it was distilled from. */
export interface TeacherModel {
  /** The ONNX file's sha256 (SentenceModel.sha256). */
  readonly sha256: string;
  readonly dims: number;
  /** The model's own score curve: the static tier's, when its folder has none. */
  readonly calibration: ScoreCalibration;
}

export class StaticTier {
  private constructor(
    private readonly tokenizer: FolderTokenizer,
    private readonly scales: Float32Array,
    private readonly rows: Int8Array,
    readonly dims: number,
    /** How the static tier's cosines become scores (static/calibration.json, else the model's curve). */
    readonly calibration: ScoreCalibration,
  ) {}

  /**
   * The static tier of the model folder `dir`, or undefined when it has none (`static/vectors.bin`
   * absent). A tier distilled from another model (static/config.json names the ONNX file's sha256),
   * of another vocabulary or dimension, or a damaged file stops the start with the file named.
   */
  static load(dir: string, tokenizer: FolderTokenizer, model: TeacherModel): StaticTier | undefined {
    if (!hasFile(dir, STATIC_FILES.vectors)) return undefined;
    const path = join(dir, STATIC_FILES.vectors);
    const config = readJsonObject(dir, STATIC_FILES.config);
    if (config.teacher_sha256 !== model.sha256)
      throw new ModelFolderError(
        `${join(dir, STATIC_FILES.config)}: the static tier was distilled from another model (teacher_sha256 ` +
          `${JSON.stringify(config.teacher_sha256)}, the folder's ONNX file is ${model.sha256}); rebuild it ` +
          `with training/static.sh or delete ${join(dir, "static")}`,
      );
    const file = readFileSync(path);
    if (file.length < HEADER_BYTES || file.toString("latin1", 0, MAGIC.length) !== MAGIC)
      throw new ModelFolderError(`${path}: not a static tier file (it starts with ${MAGIC})`);
    const version = file.readUInt32LE(MAGIC.length);
    const count = file.readUInt32LE(MAGIC.length + 4);
    const dims = file.readUInt32LE(MAGIC.length + 8);
    if (version !== VERSION) throw new ModelFolderError(`${path}: version ${version}, expected ${VERSION}`);
    if (count !== tokenizer.words.length || dims !== model.dims)
      throw new ModelFolderError(
        `${path}: ${count} rows of ${dims} dimensions, but the model has ${tokenizer.words.length} word pieces of ${model.dims}`,
      );
    const expected = HEADER_BYTES + count * 4 + count * dims;
    if (file.length !== expected)
      throw new ModelFolderError(`${path}: ${file.length} bytes, expected ${expected}`);
    // Copied out of the file's buffer, whose offset need not suit a Float32Array.
    const scales = new Float32Array(
      new Uint8Array(file.subarray(HEADER_BYTES, HEADER_BYTES + count * 4)).buffer,
    );
    const rows = new Int8Array(file.buffer, file.byteOffset + HEADER_BYTES + count * 4, count * dims);
    const calibration = readCalibration(dir, STATIC_FILES.calibration, model.calibration);
    return new StaticTier(tokenizer, scales, rows, dims, calibration);
  }

  /** The text's static vector: the normalised sum of its word pieces' rows (zero for a text of none). */
  embed(text: string): Float32Array {
    const { dims, rows, scales } = this;
    const sum = new Float64Array(dims);
    for (const piece of this.tokenizer.pieces(text)) {
      const scale = scales[piece] ?? 0;
      const offset = piece * dims;
      for (let d = 0; d < dims; d++) sum[d] = (sum[d] as number) + scale * (rows[offset + d] as number);
    }
    let norm = 0;
    for (const x of sum) norm += x * x;
    norm = Math.sqrt(norm);
    const vector = new Float32Array(dims);
    if (norm > 0) for (let d = 0; d < dims; d++) vector[d] = (sum[d] as number) / norm;
    return vector;
  }
}
