import { type ArgumentProblem, argumentChecker, type Tool } from "../discovery/index.ts";

/** Compiled argument checkers kept (least recently used dropped first). */
const CACHED_CHECKERS = 1_000;

/**
 * Checks dispatched tool calls' arguments against each tool's args schema. A schema is compiled on
 * the first call of its tool (a large one takes tens of milliseconds) and reused until the tool
 * changes (its record hash) or 1,000 other tools were checked since.
 */
export class ToolCallChecker {
  readonly #checkers = new Map<string, (args: unknown) => ArgumentProblem[]>();

  check(tool: Tool, args: unknown): ArgumentProblem[] {
    const key = `${tool.name}\u0000${tool.hash}`;
    let checker = this.#checkers.get(key);
    if (checker)
      this.#checkers.delete(key); // re-inserted below: most recently used last
    else {
      try {
        checker = argumentChecker(tool.argsSchema);
      } catch {
        // A schema that does not compile cannot judge the call; let the tool's own validation do it.
        checker = () => [];
      }
      if (this.#checkers.size >= CACHED_CHECKERS) {
        const oldest = this.#checkers.keys().next().value;
        if (oldest !== undefined) this.#checkers.delete(oldest);
      }
    }
    this.#checkers.set(key, checker);
    return checker(args);
  }
}

/** The problems as one message for the model, naming each field and what it expects. */
export function repairMessage(toolName: string, problems: readonly ArgumentProblem[]): string {
  const lines = problems.map(
    (p) => `- ${p.path === "" ? "arguments" : p.path.slice(1).replaceAll("/", ".")}: ${p.message}`,
  );
  return `The arguments of ${toolName} do not match its schema; fix these and call it again:\n${lines.join("\n")}`;
}
