/**
 * A "billion laughs" YAML document: nine anchors, each aliasing the one before nine times, so the
 * last expands to 9^8 (43 million) nodes. `prefix` is placed before the anchors (front matter, keys).
 */
export function yamlAliasBomb(prefix = ""): string {
  const lines = [`${prefix}a0: &a0 ["lol"]`];
  for (let i = 1; i <= 8; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(", ")}]`,
    );
  return `${lines.join("\n")}\n`;
}
