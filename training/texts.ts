// The text wayfind embeds each tool of a pairs file as (src/semantic/text.ts), so the model is trained
// on what it will be asked to read. Reads a pairs file (JSONL, gzipped or not: {"tool": {name,
// description}, "negatives": [...]} per line) and writes {"name", "description", "text"} per distinct
// tool, one JSON per line.
// Usage: node --import tsx training/texts.ts PAIRS OUT
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { toolEmbeddingText } from "../src/semantic/text.ts";

interface ToolRef {
  readonly name: string;
  readonly description: string;
}

const [pairsPath, outPath] = process.argv.slice(2);
if (pairsPath === undefined || outPath === undefined) {
  process.stderr.write("usage: node --import tsx training/texts.ts PAIRS OUT\n");
  process.exit(2);
}
const raw = readFileSync(pairsPath);
const lines = (pairsPath.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8").split("\n");
const seen = new Map<string, ToolRef>();
for (const line of lines) {
  if (line.trim() === "") continue;
  const pair = JSON.parse(line) as { tool: ToolRef; negatives?: ToolRef[] };
  for (const tool of [pair.tool, ...(pair.negatives ?? [])])
    seen.set(JSON.stringify([tool.name, tool.description]), tool);
}
const out = [...seen.values()].map((tool) =>
  JSON.stringify({
    ...tool,
    text: toolEmbeddingText({ name: tool.name, title: "", description: tool.description }),
  }),
);
writeFileSync(outPath, `${out.join("\n")}\n`);
process.stderr.write(`${out.length} tool texts written to ${outPath}\n`);
