import {
  type ArgumentProblem,
  argumentChecker,
  isLargeSchema,
  largeSchemaArgumentProblems,
  type Tool,
} from "../discovery/index.ts";
import { type FieldViolation, invalidArgument } from "../errors.ts";
import { type JsonObject, jsonShape } from "../json.ts";
import { describeLimit, LIMITS, type Limit } from "../limits.ts";
import { LruCache } from "../lru.ts";

/** Compiled argument checkers kept (least recently used dropped first). */
const CACHED_CHECKERS = 1_000;

/** A tool's compiled checker, or the mark of a schema large enough to be checked in the schema worker. */
type Checker = ((args: unknown) => ArgumentProblem[]) | "off-thread";

/**
 * Checks dispatched tool calls' arguments against each tool's args schema. A schema is compiled on
 * the first call of its tool and reused until the tool changes (its record hash) or 1,000 other tools
 * were checked since. A large schema (tens of milliseconds to compile) is compiled and checked in the
 * schema worker instead, so no call holds the event loop for it.
 */
export class ToolCallChecker {
  private readonly checkers = new LruCache<string, Checker>(CACHED_CHECKERS);

  check(tool: Tool, args: unknown): readonly ArgumentProblem[] | Promise<readonly ArgumentProblem[]> {
    const key = `${tool.name}\u0000${tool.hash}`;
    let checker = this.checkers.get(key);
    if (checker === undefined) {
      checker = isLargeSchema(tool.argsSchema) ? "off-thread" : compileInline(tool.argsSchema);
      this.checkers.set(key, checker);
    }
    if (checker !== "off-thread") return checker(args);
    return largeSchemaArgumentProblems(key, tool.argsSchema, args).catch((error: unknown) => {
      // A schema that does not compile (the worker's message) cannot judge the call, as inline; a
      // lost worker is the server's failure, not a valid call.
      if (typeof error === "string") return [];
      throw error;
    });
  }
}

function compileInline(schema: JsonObject): (args: unknown) => ArgumentProblem[] {
  try {
    return argumentChecker(schema);
  } catch {
    // A schema that does not compile cannot judge the call; let the tool's own validation do it.
    return () => [];
  }
}

/** The problems as one message for the model, naming each field and what it expects. */
export function repairMessage(toolName: string, problems: readonly ArgumentProblem[]): string {
  const lines = problems.map(
    (p) => `- ${p.path === "" ? "arguments" : p.path.slice(1).replaceAll("/", ".")}: ${p.message}`,
  );
  return `The arguments of ${toolName} do not match its schema; fix these and call it again:\n${lines.join("\n")}`;
}

/** The problems as a request's field violations (`arguments.items.0.sku`), for INVALID_ARGUMENT. */
export function argumentViolations(problems: readonly ArgumentProblem[]): FieldViolation[] {
  return problems.map((p) => ({ field: `arguments${p.path.replaceAll("/", ".")}`, description: p.message }));
}

/** How deep a call's arguments may nest and how many values they may hold (the proto's bounds). */
interface ArgumentBounds {
  readonly depth: Limit;
  readonly values: Limit;
}

export const CALL_TOOL_ARGUMENTS: ArgumentBounds = {
  depth: LIMITS.callToolArgumentsDepth,
  values: LIMITS.callToolArgumentsValues,
};
export const CHECK_TOOL_CALL_ARGUMENTS: ArgumentBounds = {
  depth: LIMITS.checkToolCallArgumentsDepth,
  values: LIMITS.checkToolCallArgumentsValues,
};

/**
 * What is wrong with a call's arguments as a whole (nested too deep, too many values), or
 * undefined: checked before anything walks them (the schema check, an encoding), with the same
 * bounds and words whatever brought the call (CallTool, CheckToolCall, tools/call on /mcp). The
 * count stops at the bound, so a hostile value costs no more than an allowed one.
 */
export function argumentsShapeProblem(args: unknown, bounds = CALL_TOOL_ARGUMENTS): string | undefined {
  const shape = jsonShape(args, bounds.depth.max, bounds.values.max);
  const over =
    shape.depth > bounds.depth.max
      ? bounds.depth
      : shape.values > bounds.values.max
        ? bounds.values
        : undefined;
  return over === undefined ? undefined : `arguments must have ${describeLimit(over)}; these have more`;
}

/** INVALID_ARGUMENT for arguments past the bounds (argumentsShapeProblem), naming the field. */
export function checkArgumentsShape(args: unknown, bounds: ArgumentBounds): void {
  const problem = argumentsShapeProblem(args, bounds);
  if (problem !== undefined) throw invalidArgument(problem, [{ field: "arguments", description: problem }]);
}
