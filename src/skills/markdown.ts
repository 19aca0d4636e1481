/**
 * Markdown body → skill parts, shared by `*.skill.md` bodies and Agent Skills `SKILL.md` files.
 *
 * Mapping: the first `# H1` is the title; list items (numbered or bulleted, top level) under ordinary
 * headings are the steps, or, when the body has no list, its paragraphs are; list items/paragraphs under
 * a "Preconditions / Prerequisites / Requirements / Before you start" heading are preconditions, under a
 * "Failure modes / Troubleshooting / Pitfalls / Common errors / Gotchas" heading failure modes. Nested
 * list items, continuation lines and fenced code blocks stay attached to the item they follow.
 */
export interface MarkdownParts {
  readonly title: string | undefined;
  readonly steps: string[];
  readonly preconditions: string[];
  readonly failureModes: string[];
}

type Section = "main" | "preconditions" | "failures";

/** The opening of an ATX heading; its closing `#`s and spaces are trimmed by headingText. */
const HEADING_START = /^\s{0,3}(#{1,6})\s+/;
const SPACE = /\s/;
/** Ends a line for `.`: a heading whose text holds one is not a heading. */
const LINE_TERMINATOR = /[\r\u2028\u2029]/;
const LIST_ITEM = /^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$/;
const FENCE = /^\s*(```|~~~)/;

function sectionOf(heading: string): Section {
  if (/precondition|prerequisite|requirement|before you (start|begin)/i.test(heading)) return "preconditions";
  if (
    /failure|troubleshoot|pitfall|common (errors|mistakes|problems)|gotcha|if (it|this|something) fails/i.test(
      heading,
    )
  )
    return "failures";
  return "main";
}

/**
 * `## Title ##` → level 2, "Title": what `/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/` captures, without its
 * backtracking. That regex is cubic on a line of spaces between text and a non-space (a caller's skill
 * pack with one long such heading line held the event loop for seconds); the closing run is found by
 * one scan from the end.
 */
export function parseHeading(line: string): { level: number; text: string } | undefined {
  const start = HEADING_START.exec(line);
  if (!start) return undefined;
  const from = start[0].length;
  let end = line.length;
  while (end > from && SPACE.test(line[end - 1] ?? "")) end--;
  while (end > from && line[end - 1] === "#") end--;
  while (end > from && SPACE.test(line[end - 1] ?? "")) end--;
  const text = line.slice(from, end);
  if (LINE_TERMINATOR.test(text)) return undefined;
  return { level: start[1]?.length ?? 1, text };
}

export function parseMarkdownBody(body: string): MarkdownParts {
  let title: string | undefined;
  let section: Section = "main";
  const items: Record<Section, string[]> = { main: [], preconditions: [], failures: [] };
  const paragraphs: Record<Section, string[]> = { main: [], preconditions: [], failures: [] };
  // The text block currently being built: a list item or a paragraph.
  let current: { kind: "item" | "para"; lines: string[]; section: Section } | null = null;
  let inFence = false;

  const flush = () => {
    if (!current) return;
    const text = current.lines.join("\n").trim();
    if (text.length > 0) (current.kind === "item" ? items : paragraphs)[current.section].push(text);
    current = null;
  };

  for (const rawLine of body.replace(/\r\n?/g, "\n").split("\n")) {
    if (FENCE.test(rawLine)) {
      inFence = !inFence;
      if (!current) current = { kind: "para", lines: [], section };
      current.lines.push(rawLine);
      continue;
    }
    if (inFence) {
      current?.lines.push(rawLine);
      continue;
    }
    const heading = parseHeading(rawLine);
    if (heading) {
      flush();
      const { level, text } = heading;
      if (level === 1 && title === undefined) title = text;
      else section = sectionOf(text);
      continue;
    }
    if (rawLine.trim().length === 0) {
      // A blank line ends a paragraph; a list item may continue after it (loose lists).
      if (current?.kind === "para") flush();
      continue;
    }
    const item = LIST_ITEM.exec(rawLine);
    const indent = item?.[1]?.length ?? 0;
    if (item && indent < 2) {
      flush();
      current = { kind: "item", lines: [item[2] ?? ""], section };
      continue;
    }
    if (current?.kind === "item" && (item || /^\s+/.test(rawLine))) {
      current.lines.push(item ? `- ${item[2] ?? ""}` : rawLine.trim());
      continue;
    }
    if (current?.kind === "item") flush();
    if (!current) current = { kind: "para", lines: [], section };
    current.lines.push(rawLine.trim());
  }
  flush();
  const pick = (s: Section) => (items[s].length > 0 ? items[s] : paragraphs[s]);
  return { title, steps: pick("main"), preconditions: pick("preconditions"), failureModes: pick("failures") };
}
