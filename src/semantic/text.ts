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
export const TOOL_TEXT_VERSION = "title-name-description-1";

/**
 * The text a tool is embedded from: its title, its name split into words, then its description —
 * "Gimmee Air Quality airqualityforecast: Get the 2-day air quality forecast for any US zip code."
 * Titles say how people call a tool (on the even half of the public sets they lifted MetaTool's
 * plugins, which have them, by 0.004 R@5). Parameters are left out: they lifted the even halves by
 * 0.003–0.005 but drowned short descriptions — the demo's "Current weather and 3-day forecast for a
 * city" followed by two described parameters lost half its similarity to "will it rain tomorrow".
 */
export function toolEmbeddingText(tool: ToolDescription): string {
  const name = splitName(tool.name);
  const title = tool.title.trim();
  const head = title !== "" && title.toLowerCase() !== name.toLowerCase() ? `${title} ${name}` : name;
  const about = tool.description.trim();
  return about === "" ? head : `${head}: ${about}`;
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
