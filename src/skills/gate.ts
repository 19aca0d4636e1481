import type { TextAuthor, ToolGate } from "./model.ts";

/** Characters that continue a tool name; a match must not be glued to them on either side. */
const NAME_CHAR = /[A-Za-z0-9_.-]/;
/** A run of name characters, optionally in backticks (kept around the hint when they pair). */
const NAME_RUN = /(`?)([A-Za-z0-9_][A-Za-z0-9_.-]*)(`?)/g;
/** Characters that, next to a name, make it part of a URL, a path, an e-mail address or a flag. */
const ADDRESS_CHAR = /[/@:\\]/;
const ADDRESS_CHAR_BEFORE = /[/@:\\.$-]/;

function capabilityOf(toolName: string): string {
  const last = toolName.split(/[./:]/).pop() ?? toolName;
  return last
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function hint(open: string, name: string, close: string): string {
  const quoted = `tool_search for "${capabilityOf(name)}"`;
  return open === close ? quoted : `${open}${quoted}${close}`;
}

/**
 * Whether a word reads as a tool's name by its shape alone: snake_case or camelCase, not an
 * ALL_CAPS constant or environment variable, not a file name (a short extension after the last dot).
 * The shape, never the catalog, decides, so the rewrite cannot tell which hidden names exist.
 */
function looksLikeToolName(word: string): boolean {
  if (/^[A-Z0-9_.-]+$/.test(word)) return false;
  if (/\.[a-z0-9]{1,4}$/.test(word)) return false;
  // camelCase: a part (between dots) that starts with two lower-case letters (not iPhone, GitHub).
  return word.includes("_") || word.split(".").some((part) => /^[a-z][a-z0-9]+[A-Z][a-z]/.test(part));
}

/**
 * Operator text (global skills) may name any tool, and the caller may see only some: every
 * tool-like name the caller cannot see becomes `tool_search for "<capability>"`, whether a tool of
 * that name exists or not, so the model learns what to look for but neither the hidden name nor
 * whether it exists. Names inside URLs, paths and e-mail addresses are left alone.
 */
function operatorTextRewriter(isVisible: (name: string) => boolean): (text: string) => string {
  return (text) =>
    text.replace(NAME_RUN, (whole, open: string, run: string, close: string, offset: number) => {
      // A sentence's full stop is not part of the name before it.
      const name = run.replace(/\.+$/, "");
      const before = text[offset - 1] ?? " ";
      const after = text[offset + open.length + name.length] ?? " ";
      if (ADDRESS_CHAR_BEFORE.test(before) || ADDRESS_CHAR.test(after)) return whole;
      if (!looksLikeToolName(name) || isVisible(name)) return whole;
      const trailing = run.slice(name.length);
      return trailing === "" ? hint(open, name, close) : `${hint(open, name, "")}${trailing}${close}`;
    });
}

/**
 * A tenant's own text names what its tenant may see; only names its narrowing removed are
 * rewritten (the tenant wrote the rest, so keeping it reveals nothing).
 */
function tenantTextRewriter(narrowedAway: readonly string[]): (text: string) => string {
  const hidden = narrowedAway.filter((name) => name.length > 0);
  if (hidden.length === 0) return (text) => text;
  // Longest first so `github.create_pr_review` wins over `github.create_pr`.
  hidden.sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
  return (text) => {
    const present = hidden.filter((name) => text.includes(name));
    if (present.length === 0) return text;
    const pattern = new RegExp(`(\`?)(${present.map(escapeRegExp).join("|")})(\`?)`, "g");
    return text.replace(pattern, (whole, open: string, name: string, close: string, offset: number) => {
      const before = text[offset - 1];
      const after = text[offset + whole.length];
      const trailingDot = after === "." && !NAME_CHAR.test(text[offset + whole.length + 1] ?? " ");
      if ((before && NAME_CHAR.test(before)) || (after && NAME_CHAR.test(after) && !trailingDot))
        return whole;
      return hint(open, name, close);
    });
  };
}

/** Builds the text rewriter for one call and one author (see the two rewriters above). */
export function toolGateRewriter(gate: ToolGate | undefined, author: TextAuthor): (text: string) => string {
  if (!gate) return (text) => text;
  return author === "operator"
    ? operatorTextRewriter((name) => gate.isVisible(name))
    : tenantTextRewriter(gate.narrowedAway());
}
