import { invalidArgument } from "./errors.ts";

/** A JSON value as parsed (JSON.parse) and stored: tool schemas and examples, change-log payloads. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * Canonical JSON: object keys sorted (UTF-16 order) at every depth, no whitespace, `undefined` members
 * left out. The same content always gives the same bytes whatever key order it arrived in: content
 * hashes compare equal and a rendered prompt prefix stays cacheable. NaN and ±Infinity are not JSON
 * and are refused rather than silently written as null.
 */
export function canonicalJson(value: unknown): string {
  // Native stringify with a key-sorting replacer is several times faster than a recursive writer.
  const json = JSON.stringify(value, (key, v: unknown) => {
    if (typeof v === "number" && !Number.isFinite(v))
      throw invalidArgument(`${key === "" ? "the value" : `"${key}"`} is ${v}, which is not a JSON number`);
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
  return json ?? "null";
}

/**
 * How many JSON values a value holds (itself included) and how deeply they nest. Stops counting
 * once past `maxDepth` or `maxValues`, so an oversize input costs no more than the bound (and its
 * recursion never goes deeper than `maxDepth`).
 */
export function jsonShape(
  value: unknown,
  maxDepth: number,
  maxValues: number,
): { values: number; depth: number } {
  let values = 0;
  let depth = 0;
  const visit = (v: unknown, level: number): void => {
    values++;
    depth = Math.max(depth, level);
    if (level > maxDepth || values > maxValues || v === null || typeof v !== "object") return;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      visit(child, level + 1);
      if (level > maxDepth || values > maxValues) return;
    }
  };
  visit(value, 1);
  return { values, depth };
}
