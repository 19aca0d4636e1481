// The text wayfind embeds each tool as (src/semantic/text.ts), so the model is trained on what it will
// be asked to read. Reads pairs files and tool pools (JSONL, gzipped or not) and writes {"name",
// "description", "text"} per distinct tool, one JSON per line. A line may hold a pair of this
// folder's shape ({"tool", "negatives"}), a pair of the team's shared shape ({"tools": [...]}), or be
// a tool itself ({"name", "description"}: a pool's line).
// Usage: node --import tsx training/texts.ts PAIRS OUT [MORE_PAIRS_OR_POOLS...]
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { toolEmbeddingText } from "../src/semantic/text.ts";

interface ToolRef {
  readonly name: string;
  readonly description: string;
}

interface Line {
  readonly tool?: ToolRef;
  readonly negatives?: ToolRef[];
  readonly tools?: ToolRef[];
  readonly name?: string;
  readonly description?: string;
}

const [pairsPath, outPath, ...more] = process.argv.slice(2);
if (pairsPath === undefined || outPath === undefined) {
  process.stderr.write("usage: node --import tsx training/texts.ts PAIRS OUT [MORE_PAIRS_OR_POOLS...]\n");
  process.exit(2);
}

/** The tools a line names: a pair's answer and negatives, a shared pair's tools, or a pool's tool. */
function toolsOf(line: Line): ToolRef[] {
  if (line.tool) return [line.tool, ...(line.negatives ?? [])];
  if (line.tools) return line.tools;
  if (typeof line.name === "string") return [{ name: line.name, description: line.description ?? "" }];
  return [];
}

const seen = new Map<string, ToolRef>();
for (const path of [pairsPath, ...more]) {
  const raw = readFileSync(path);
  const lines = (path.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8").split("\n");
  for (const line of lines) {
    if (line.trim() === "") continue;
    for (const tool of toolsOf(JSON.parse(line) as Line)) {
      const description = tool.description ?? "";
      seen.set(JSON.stringify([tool.name, description]), { name: tool.name, description });
    }
  }
}
const out = [...seen.values()].map((tool) =>
  JSON.stringify({
    ...tool,
    text: toolEmbeddingText({ name: tool.name, title: "", description: tool.description }),
  }),
);
writeFileSync(outPath, `${out.join("\n")}\n`);
process.stderr.write(`${out.length} tool texts written to ${outPath}\n`);
