import { type ParseArgsConfig, parseArgs } from "node:util";
import { didYouMean } from "../config/errors.ts";

/** A command line that cannot run as written: what to fix, then the command's usage (exit code 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

const HELP = { help: { type: "boolean", short: "h" } } as const;

type Options = NonNullable<ParseArgsConfig["options"]>;

type Values<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP; strict: true }>
>["values"];

/**
 * The flags of one command, strictly. `--help` / `-h` prints the command's usage and gives
 * undefined; an unknown flag is a UsageError naming the closest known flag.
 */
export function commandArgs<const O extends Options>(
  command: string,
  usage: string,
  args: string[],
  options: O,
): Values<O> | undefined {
  let values: Values<O>;
  try {
    values = parseArgs({ args, options: { ...options, ...HELP }, strict: true }).values as Values<O>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const unknown = /Unknown option '([^']+)'/.exec(message)?.[1];
    if (unknown === undefined) throw new UsageError(`wayfind ${command}: ${message}\n\n${usage}`);
    const meant = didYouMean(unknown.replace(/^-+/, ""), Object.keys(options));
    throw new UsageError(
      `wayfind ${command}: unknown option ${unknown}${meant ? `; did you mean --${meant}?` : ""}\n\n${usage}`,
    );
  }
  if ((values as { help?: boolean }).help) {
    process.stdout.write(usage);
    return undefined;
  }
  return values;
}

/**
 * A command line whose `what` (a command, an action) is none of `known`: names the closest one when
 * it is close enough to be a typo (`wayfind serv` → serve), then the usage.
 */
export function unknownWord(
  what: string,
  word: string | undefined,
  known: readonly string[],
  usage: string,
): UsageError {
  if (word === undefined || word === "") return new UsageError(`${what}: say ${oneOf(known)}\n\n${usage}`);
  const meant = didYouMean(word, known);
  return new UsageError(
    `${what}: unknown ${JSON.stringify(word)}${meant ? `; did you mean ${JSON.stringify(meant)}?` : `: say ${oneOf(known)}`}\n\n${usage}`,
  );
}

/** "a, b or c". */
function oneOf(words: readonly string[]): string {
  return words.length < 2 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} or ${words.at(-1)}`;
}
