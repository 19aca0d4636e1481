import type { TextAuthor, ToolGate } from "./model.ts";

/** Characters that continue a tool name; a match must not be glued to them on either side. */
const NAME_CHAR = /[A-Za-z0-9_.-]/;
/** A run of name characters, optionally in backticks (kept around the hint when they pair). */
const NAME_RUN = /(`?)([A-Za-z0-9_][A-Za-z0-9_.-]*)(`?)/g;
/**
 * Characters that, next to a name, make it part of a URL, a path, an e-mail address or a flag, or,
 * after it, code: a call (`pd.read_excel(`) or a keyword argument (`remove_duplicates=True`).
 */
const ADDRESS_CHAR = /[/@:\\(=]/;
const ADDRESS_CHAR_BEFORE = /[/@:\\.$-]/;

function capabilityOf(toolName: string): string {
  const last = toolName.split(/__|[./:]/).pop() ?? toolName;
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
 * Whether a word is shaped like a tool's name: snake_case or camelCase, not an ALL_CAPS constant or
 * environment variable, not a file name (a short extension after the last dot).
 */
function toolShaped(word: string): boolean {
  if (/^[A-Z0-9_.-]+$/.test(word)) return false;
  if (/\.[a-z0-9]{1,4}$/.test(word)) return false;
  // camelCase: a part (between dots) that starts with two lower-case letters (not iPhone, GitHub).
  return word.includes("_") || word.split(".").some((part) => /^[a-z][a-z0-9]+[A-Z][a-z]/.test(part));
}

/**
 * Verbs tool names start with (`create_issue`, `github.get_file_contents`, `jira.createIssue`), or
 * take second after a service's name (`slack_send_message`). Words that are as often nouns or name
 * a state (`stop_reason`, `record_id`, `index_name`) are left out on purpose.
 */
const TOOL_VERBS = new Set(
  `get list search find create update delete remove add send post read write fetch query run execute
   open close merge upload download book cancel schedule transition describe convert fill take refund
   move copy rename check lookup invite assign reply publish deploy trigger sync export import generate
   analyze analyse summarize summarise translate navigate click browse scrape extract edit modify patch
   approve reject archive restore subscribe unsubscribe notify invoke calculate compute validate verify
   resolve retrieve submit grant revoke rotate share fork clone install uninstall scan crawl purge drop
   clear flush reset invalidate terminate`.split(/\s+/),
);

/** Last words of field and parameter names (`refresh_token`, `page_size`, `lock_timeout`), never of a tool's. */
const FIELD_ENDINGS = new Set(
  `id ids token tokens type types reason size count limit limits timeout url uri path paths name names
   number at by only rate summary status time ms seconds hint handler mode format config key keys value
   values flag enabled disabled state result results`.split(/\s+/),
);

/**
 * Extensions that make a name under a tool namespace a file still (`github.md`, `slack.json`): only
 * those no tool is named like (`git.log`, `deploy.sh`, `cloud.run` stay tools).
 */
const FILE_EXTENSIONS = new Set("md txt json yaml yml toml csv tsv pdf png jpg jpeg svg zip".split(" "));

/** `ns.name` or MCP's `mcp__ns__name`: the namespace and the name under it. */
const NAMESPACED = /^(?:mcp__)?([A-Za-z0-9_-]+?)(?:__|\.)([A-Za-z0-9_.-]+)$/;

/**
 * Whether a word names something under a namespace of the caller's catalog (`hr.secret_payroll`,
 * `ops.status`): a tool whatever its words, unless what follows is a file's extension.
 */
function underKnownNamespace(word: string, isKnownNamespace: (namespace: string) => boolean): boolean {
  const match = NAMESPACED.exec(word);
  if (!match) return false;
  const [, namespace = "", rest = ""] = match;
  return isKnownNamespace(namespace) && !FILE_EXTENSIONS.has(rest.toLowerCase());
}

/**
 * Whether a tool-shaped word reads as a tool rather than a field, a parameter or an event: its last
 * part (after a namespace: `.`, `/`, `:` or MCP's `__`) starts with an action verb (or has one second
 * after a service's name), and does not end as field names do. Decided on the demo's and Anthropic's
 * public skill packs: 39 of 645 tool-shaped words there pass, the tool names among them
 * (`create_issue`, `slack_send_message`, `get_channel_info`) and a few method names that the code
 * rule keeps (`pd.read_excel(`), while `next_cursor`, `max_tokens`, `stop_reason` or `grant_type`
 * stay as written. The word alone decides, never the catalog's tools, so the rewrite cannot tell
 * which hidden names exist (names under a known namespace are decided by underKnownNamespace).
 */
function looksLikeTool(word: string): boolean {
  if (!toolShaped(word)) return false;
  const last = word.split(/__|[./:]/).pop() ?? word;
  const words = last
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[_-]+/)
    .filter((w) => w !== "");
  const final = words.at(-1) ?? "";
  if (words.length < 2 || FIELD_ENDINGS.has(final) || TOOL_VERBS.has(final) || /^\d+$|ed$/.test(final))
    return false;
  return TOOL_VERBS.has(words[0] ?? "") || (words.length >= 3 && TOOL_VERBS.has(words[1] ?? ""));
}

/**
 * Operator text (global skills) may name any tool, and the caller may see only some: every name that
 * reads as a tool (looksLikeTool, or any name under a namespace of the caller's catalog) the caller
 * cannot see becomes `tool_search for "<capability>"`, whether a tool of that name exists or not, so
 * the model learns what to look for but neither the hidden name nor whether it exists. Field names,
 * names inside URLs, paths and e-mail addresses, and code (calls, keyword arguments) are left alone.
 */
function operatorTextRewriter(gate: ToolGate): (text: string) => string {
  const readsAsTool = (name: string) =>
    looksLikeTool(name) || underKnownNamespace(name, (namespace) => gate.isKnownNamespace(namespace));
  return (text) =>
    text.replace(NAME_RUN, (whole, open: string, run: string, close: string, offset: number) => {
      // A sentence's full stop is not part of the name before it.
      const name = run.replace(/\.+$/, "");
      const before = text[offset - 1] ?? " ";
      const after = text[offset + open.length + name.length] ?? " ";
      if (ADDRESS_CHAR_BEFORE.test(before) || ADDRESS_CHAR.test(after)) return whole;
      if (!readsAsTool(name) || gate.isVisible(name)) return whole;
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
  return author === "operator" ? operatorTextRewriter(gate) : tenantTextRewriter(gate.narrowedAway());
}
