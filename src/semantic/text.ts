import type { SearchIndex } from "../discovery/index.ts";
import type { ToolText } from "./vectors.ts";

/** What a tool is embedded from: the parts of its definition that say what it does. */
export interface ToolDescription {
  readonly name: string;
  readonly title: string;
  readonly description: string;
}

/**
 * Names the stored vectors with how their text was made: a change of the recipe below re-embeds every
 * tool, as a change of model does (see TextVectors).
 */
export const TOOL_TEXT_VERSION = "title-name-meaningful-description-2";

/**
 * The text a tool is embedded from: its title, its name split into words, then the meaningful part of
 * its description (meaningfulDescription) — "Gimmee Air Quality airqualityforecast: Get the 2-day air
 * quality forecast for any US zip code." Titles say how people call a tool (on the even half of the
 * public sets they lifted MetaTool's plugins, which have them, by 0.004 R@5). Parameters are left out:
 * they lifted the even halves by 0.003–0.005 but drowned short descriptions — the demo's "Current
 * weather and 3-day forecast for a city" followed by two described parameters lost half its
 * similarity to "will it rain tomorrow".
 */
export function toolEmbeddingText(tool: ToolDescription): string {
  const name = splitName(tool.name);
  const title = tool.title.trim();
  const head = title !== "" && title.toLowerCase() !== name.toLowerCase() ? `${title} ${name}` : name;
  const about = meaningfulDescription(tool.description);
  return about === "" ? head : `${head}: ${about}`;
}

/**
 * A docstring section that lists the call rather than saying what the tool does: arguments, return
 * value, errors, call examples ("Args:", "**Parameters:**", "## Returns", "Optional parameters:").
 * Group 1: whatever follows the colon on the header's line.
 */
const SECTION =
  /^(?:#+\s*)?[*_]*(?:(?:[a-z]+\s+){0,3}(?:args|arguments|parameters|params|kwargs)|keyword\s+(?:args|arguments)|returns?|return\s+value|raises|throws|yields|examples?|usage(?:\s+examples?)?|example\s+(?:usage|request|response|call))[*_]*\s*:[*_]*\s*(.*)$/i;

/** A reStructuredText field of a parameter or result (":param city: …", ":rtype: str"). */
const FIELD =
  /^:(?:param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|except|exception|yields?)\b/i;

/** A line of a section's list: indented, a bullet or quote, or "name: …" / "name (type) - …". */
const LISTED = /^(?:\s|[-*+>•]|[*`]*[\w.[\]]+(?:[*`]*\s*\([^)]*\))?[*`]*\s*(?::|—|–|-\s))/;

/** A line of a JSON dump: a brace or bracket first, or a quoted key. */
const JSON_LINE = /^[`'"]*[{}[\]]|^"[^"]*"\s*:/;

/** A section header after a sentence on the same line ("Get the weather. Args: latitude: …"). */
const INLINE_SECTION = /(?<=[.!?])\s+(?:args|arguments|parameters|params|returns|raises)\s*:.*$/i;

/**
 * A description's sentences that say what the tool does, on one line: docstring sections that list
 * the call (arguments, returns, raises, examples; reStructuredText `:param x:` fields), fenced code and
 * JSON dumps are left out, so a tool's one meaningful sentence is not drowned by its parameters. A
 * description that is nothing but such sections is kept whole. Linear in the description's length.
 */
export function meaningfulDescription(description: string): string {
  const kept: string[] = [];
  let inSection = false;
  let inFence = false;
  for (const line of description.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.startsWith("```")) {
      inFence = !inFence;
      continue;
    }
    if (inFence || trimmed === "") continue;
    if (SECTION.test(trimmed) || FIELD.test(trimmed)) {
      inSection = true;
      continue;
    }
    if (inSection && (LISTED.test(line) || JSON_LINE.test(trimmed))) continue;
    inSection = false;
    if (JSON_LINE.test(trimmed)) continue;
    const prose = trimmed.replace(INLINE_SECTION, "");
    const dump = prose.indexOf('{"');
    kept.push(dump >= 0 ? prose.slice(0, dump).trimEnd() : prose);
  }
  const meaningful = kept.join(" ").replace(/\s+/g, " ").trim();
  return /\p{L}/u.test(meaningful) ? meaningful : description.replace(/\s+/g, " ").trim();
}

/** "github.create_pullRequest-v2" → "github create pull Request v2". */
function splitName(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "")
    .join(" ");
}

/** Every tool of a build of the index as the vector store syncs it. */
export function toolTexts(index: SearchIndex): () => ToolText[] {
  return () =>
    index.docs.map((t) => ({ owner: t.owner, name: t.name, hash: t.hash, text: () => toolEmbeddingText(t) }));
}
