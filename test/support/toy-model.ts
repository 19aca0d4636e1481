/**
 * A sentence-embedding model folder of the shipped model's layout (onnx/model_quantized.onnx,
 * tokenizer.json, tokenizer_config.json, config.json), written by a test: a WordPiece vocabulary in
 * several languages and a graph that looks each word piece's vector up (Gather), masked by the
 * attention mask. Words of one concept in every language share one vector, so the model is
 * multilingual by construction. Small enough to write byte by byte; nothing is downloaded or checked in.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] as const;

/**
 * Writes the folder: `concepts` are groups of words (lower-case, any script; a CJK character is a
 * word piece of its own) that mean the same; each group gets its own dimension.
 */
export function writeToyModel(dir: string, concepts: readonly (readonly string[])[]): void {
  const vocab = new Map<string, number>(SPECIAL.map((token, id) => [token, id]));
  const conceptOf: number[] = SPECIAL.map(() => -1);
  concepts.forEach((words, concept) => {
    for (const word of words)
      if (!vocab.has(word)) {
        vocab.set(word, vocab.size);
        conceptOf.push(concept);
      }
  });
  const dims = concepts.length;
  // A row per vocabulary entry: 1 in its concept's dimension; special and unknown pieces are zero.
  const table = new Float32Array(vocab.size * dims);
  conceptOf.forEach((concept, id) => {
    if (concept >= 0) table[id * dims + concept] = 1;
  });
  mkdirSync(join(dir, "onnx"), { recursive: true });
  writeFileSync(join(dir, "onnx/model_quantized.onnx"), modelBytes(table, vocab.size, dims));
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tokenizerJson(vocab)));
  writeFileSync(
    join(dir, "tokenizer_config.json"),
    JSON.stringify({
      model_max_length: 64,
      cls_token: "[CLS]",
      sep_token: "[SEP]",
      pad_token: "[PAD]",
      unk_token: "[UNK]",
    }),
  );
  writeFileSync(join(dir, "config.json"), JSON.stringify({ max_position_embeddings: 64, hidden_size: dims }));
}

function tokenizerJson(vocab: ReadonlyMap<string, number>): object {
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((content) => ({
      id: vocab.get(content),
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: null,
    decoder: null,
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab),
    },
  };
}

// A minimal protobuf writer, enough for an ONNX ModelProto.

function varint(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  while (rest > 0x7f) {
    out.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** Field `field` as a varint (wire type 0). */
const num = (field: number, value: number) => [...varint(field << 3), ...varint(value)];
/** Field `field` as length-delimited bytes (wire type 2). */
const bytes = (field: number, content: readonly number[] | Uint8Array) => [
  ...varint((field << 3) | 2),
  ...varint(content.length),
  ...content,
];
const text = (field: number, value: string) => bytes(field, [...Buffer.from(value, "utf8")]);

const FLOAT = 1;
const INT64 = 7;

/** ValueInfoProto: a tensor of `elemType` whose dimensions are named (symbolic) or fixed. */
function valueInfo(name: string, elemType: number, dims: readonly (string | number)[]): number[] {
  const shape = dims.flatMap((d) => bytes(1, typeof d === "string" ? text(2, d) : num(1, d)));
  const tensorType = [...num(1, elemType), ...bytes(2, shape)];
  return [...text(1, name), ...bytes(2, bytes(1, tensorType))];
}

function node(op: string, inputs: readonly string[], outputs: readonly string[], attributes: number[] = []) {
  return [
    ...inputs.flatMap((i) => text(1, i)),
    ...outputs.flatMap((o) => text(2, o)),
    ...text(4, op),
    ...attributes,
  ];
}

/**
 * last_hidden_state = Gather(table, input_ids) × Unsqueeze(Cast(attention_mask), 2): a vector per
 * word piece, zero where the mask is 0. Opset 13, IR version 7.
 */
function modelBytes(table: Float32Array, rows: number, dims: number): Uint8Array {
  const tableTensor = [
    ...num(1, rows),
    ...num(1, dims),
    ...num(2, FLOAT),
    ...text(8, "table"),
    ...bytes(9, new Uint8Array(table.buffer, table.byteOffset, table.byteLength)),
  ];
  const axes = new BigInt64Array([2n]);
  const axesTensor = [
    ...num(1, 1),
    ...num(2, INT64),
    ...text(8, "axes"),
    ...bytes(9, new Uint8Array(axes.buffer)),
  ];
  // AttributeProto "to" = FLOAT: name (1), i (3), type (20) = INT (2).
  const castTo = bytes(5, [...text(1, "to"), ...num(3, FLOAT), ...num(20, 2)]);
  const graph = [
    ...bytes(1, node("Gather", ["table", "input_ids"], ["pieces"])),
    ...bytes(1, node("Cast", ["attention_mask"], ["mask"], castTo)),
    ...bytes(1, node("Unsqueeze", ["mask", "axes"], ["mask3"])),
    ...bytes(1, node("Mul", ["pieces", "mask3"], ["last_hidden_state"])),
    ...text(2, "toy-multilingual"),
    ...bytes(5, tableTensor),
    ...bytes(5, axesTensor),
    ...bytes(11, valueInfo("input_ids", INT64, ["batch", "sequence"])),
    ...bytes(11, valueInfo("attention_mask", INT64, ["batch", "sequence"])),
    ...bytes(12, valueInfo("last_hidden_state", FLOAT, ["batch", "sequence", dims])),
  ];
  return Uint8Array.from([...num(1, 7), ...bytes(7, graph), ...bytes(8, num(2, 13))]);
}
