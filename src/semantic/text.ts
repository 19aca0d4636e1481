/** What a tool is embedded from: the parts of its definition that say what it does. */
export interface ToolDescription {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly argsSchema: { readonly [key: string]: unknown };
}

/**
 * Names the stored vectors with how their text was made: a change of the recipe below re-embeds every
 * tool, as a change of model does (see TextVectors).
 */
export const TOOL_TEXT_VERSION = "title-params-1";

/**
 * The text a tool is embedded from: its title, its name split into words, its description, then its
 * parameters with their descriptions — "Gimmee Air Quality airqualityforecast: Get the 2-day air
 * quality forecast… Parameters: zip code (a US zip code)". Chosen on the even half of the public sets
 * over name and description alone (bench/semantic.ts): parameters say what a tool acts on, titles how
 * people call it. The model reads 128 word pieces, so a long description leaves the parameters out.
 */
export function toolEmbeddingText(tool: ToolDescription): string {
  const name = splitName(tool.name);
  const title = tool.title.trim();
  const head = title !== "" && title.toLowerCase() !== name.toLowerCase() ? `${title} ${name}` : name;
  const about = tool.description.trim();
  const parameters = parametersOf(tool.argsSchema);
  const text = about === "" ? head : `${head}: ${about}`;
  return parameters === "" ? text : `${text} Parameters: ${parameters}`;
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

/** Top-level parameters as "name (description)", comma-separated; "" for none. */
function parametersOf(schema: { readonly [key: string]: unknown }): string {
  const properties = schema.properties;
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return "";
  return Object.entries(properties as Record<string, unknown>)
    .map(([key, value]) => {
      const about =
        typeof value === "object" && value !== null && "description" in value ? value.description : undefined;
      const described = typeof about === "string" ? about.trim() : "";
      return described === "" ? splitName(key) : `${splitName(key)} (${described})`;
    })
    .join(", ");
}
