import { invalidArgument } from "../errors.ts";
import { sha256Hex } from "./json.ts";

/**
 * One name rule for every provider: the intersection of Anthropic's and OpenAI's `^[a-zA-Z0-9_-]{1,64}$`
 * and Gemini's "starts with a letter or underscore". A tool therefore has the same wire name whichever
 * provider renders it, and a valid name (`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`) passes through unchanged.
 */

const MAX = 64;
const HASH_CHARS = 8;

/** `github.create_issue` → `github__create_issue`; other illegal characters → `_`; a leading digit or dash gets `_`. */
function baseName(name: string): string {
  let mapped = name.replace(/\./g, "__").replace(/[^a-zA-Z0-9_-]/g, "_");
  if (!/^[a-zA-Z_]/.test(mapped)) mapped = `_${mapped}`;
  return mapped;
}

function hashedName(base: string, original: string): string {
  return `${base.slice(0, MAX - HASH_CHARS - 1)}_${sha256Hex(original).slice(0, HASH_CHARS)}`;
}

/**
 * Maps tool names to provider-safe names, in payload order. Deterministic, and stable under appending: an
 * earlier tool keeps its name whatever joins later, so a cached prefix never changes because of a later
 * tool. Over-long names and collisions (`a.b` next to an existing `a__b`) get an 8-hex sha256 suffix.
 */
export class ToolNameMapper {
  private readonly byProvider = new Map<string, string>();
  private readonly reserved = new Set<string>();

  /** A name the payload already uses for something else (e.g. Anthropic's tool search tool). */
  reserve(providerName: string): void {
    this.reserved.add(providerName);
  }

  private taken(name: string): boolean {
    return this.byProvider.has(name) || this.reserved.has(name);
  }

  map(original: string): string {
    const base = baseName(original);
    let candidate = base.length <= MAX ? base : hashedName(base, original);
    if (this.taken(candidate)) candidate = hashedName(base, original);
    if (this.taken(candidate)) {
      throw invalidArgument(
        `tool name "${original}" maps to "${candidate}", which another tool already uses`,
      );
    }
    this.byProvider.set(candidate, original);
    return candidate;
  }

  /** Provider name → original name, for resolving a model's tool call back to the catalog. */
  originals(): Readonly<Record<string, string>> {
    return Object.fromEntries(this.byProvider);
  }
}
