import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { JsonObject, PayloadTool } from "../../src/payload/index.ts";

interface CatalogLine {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** The public evaluation data vendored in the repository (data/eval/README.md). */
const DATA_DIR = new URL("../../data/eval", import.meta.url).pathname;

/** The shared 309-tool MCP catalog as payload tools (all stable). */
export function catalogTools(): PayloadTool[] {
  return readFileSync(join(DATA_DIR, "mcp_catalog.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as CatalogLine)
    .map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters, deferred: false }));
}

export const tool = (
  name: string,
  deferred = false,
  inputSchema: JsonObject = { type: "object", properties: {} },
) => ({
  name,
  description: `Does ${name}`,
  inputSchema,
  deferred,
});
