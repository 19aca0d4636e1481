/**
 * The text a tool is embedded from: its name split into words, then its description
 * ("split name: description"), the form the model README measured retrieval with.
 */
export function toolEmbeddingText(name: string, description: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "")
    .join(" ");
  const about = description.trim();
  return about === "" ? words : `${words}: ${about}`;
}
