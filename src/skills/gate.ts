import type { TextAuthor, ToolGate } from "./model.ts";

/** Characters that continue a tool name; a match must not be glued to them on either side. */
const NAME_CHAR = /[A-Za-z0-9_.-]/;

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

/**
 * Builds a text rewriter for one call and one author: every name the gate hides becomes
 * `tool_search for "<capability>"`, so the model learns what to look for but not the hidden name.
 */
export function toolGateRewriter(gate: ToolGate | undefined, author: TextAuthor): (text: string) => string {
  if (!gate) return (text) => text;
  const hidden = gate.hiddenNames(author).filter((name) => name.length > 0);
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
      return `${open === close ? "" : open}tool_search for "${capabilityOf(name)}"${open === close ? "" : close}`;
    });
  };
}
