import { createHash } from "node:crypto";
import { invalidArgument } from "../errors.ts";

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Canonical JSON: object keys sorted by UTF-16 code unit, no whitespace, numbers as JS prints them.
 * The same value always yields the same bytes, whatever key order the caller's schema had, which is what
 * keeps a cached prompt prefix byte-identical across requests.
 */
export function canonicalJson(value: unknown, path = "$"): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw invalidArgument(`${path}: ${value} is not a JSON number`);
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value))
        return `[${value.map((v, i) => canonicalJson(v, `${path}[${i}]`)).join(",")}]`;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k], `${path}.${k}`)}`).join(",")}}`;
    }
    default:
      throw invalidArgument(`${path}: a ${typeof value} is not JSON`);
  }
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
