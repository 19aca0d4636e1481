/**
 * Whether a URI belongs to a resource template (RFC 6570) an MCP server listed, in time linear in
 * the URI whatever the template: the template comes from the server and the URI from a caller, so
 * the match runs on RE2, never a backtracking regex. Only ownership is decided here (which server a
 * URI is read from); the server reads the URI itself and says whether it is one of its resources.
 */
import { RE2JS } from "re2js";
import { LruCache } from "../lru.ts";

/** Longer templates are not matched (no server needs them; each costs a compiled automaton). */
const MAX_TEMPLATE_CHARS = 2_000;
const COMPILED_KEPT = 1_000;

/** What each expression of a template may expand to, by its operator. */
const EXPANSIONS: Readonly<Record<string, string>> = {
  "": "[^/?#]*",
  "+": ".*",
  "#": "(?:#.*)?",
  ".": "(?:\\.[^/?#]*)*",
  "/": "(?:/[^/?#]*)*",
  ";": "(?:;[^/?#]*)*",
  "?": "(?:\\?[^#]*)?",
  "&": "(?:&[^#]*)?",
};

const compiled = new LruCache<string, RE2JS | null>(COMPILED_KEPT);

/** Whether `uri` is one of the URIs `template` expands to; false for a template that cannot be read. */
export function matchesTemplate(template: string, uri: string): boolean {
  let automaton = compiled.get(template);
  if (automaton === undefined) {
    automaton = compile(template);
    compiled.set(template, automaton);
  }
  return automaton?.testExact(uri) ?? false;
}

function compile(template: string): RE2JS | null {
  if (template.length > MAX_TEMPLATE_CHARS) return null;
  let pattern = "";
  let at = 0;
  while (at < template.length) {
    const open = template.indexOf("{", at);
    if (open < 0) {
      pattern += RE2JS.quote(template.slice(at));
      break;
    }
    const close = template.indexOf("}", open);
    if (close < 0) return null;
    if (open > at) pattern += RE2JS.quote(template.slice(at, open));
    const expression = template.slice(open + 1, close);
    const operator = /^[+#./;?&]/.test(expression) ? (expression[0] ?? "") : "";
    const expansion = EXPANSIONS[operator];
    if (expansion === undefined || expression.length === operator.length) return null;
    pattern += expansion;
    at = close + 1;
  }
  try {
    return RE2JS.compile(pattern, RE2JS.DOTALL);
  } catch {
    return null;
  }
}
