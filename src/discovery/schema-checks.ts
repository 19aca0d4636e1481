import type { JsonObject } from "../json.ts";
import { runInSlices } from "../slices.ts";
import { JobWorker } from "../worker-jobs.ts";
import type { ToolExample, ToolInput } from "./types.ts";
import {
  type ArgumentProblem,
  argsSchemaProblem,
  type ExamplesCheck,
  fullName,
  isObject,
  schemaValues,
} from "./validate.ts";

/**
 * Args schemas with more JSON values than this are compiled in a worker thread. Ajv's compile time
 * grows with the schema, and near the values bound it is too long for one turn of the event loop
 * (every other call waits), while a small schema compiles faster inline than the round trip to the
 * worker (bench/register-stall.ts measures the stall).
 */
export const OFF_THREAD_SCHEMA_VALUES = 150;

export type SchemaJob =
  | {
      readonly kind: "examples";
      readonly name: string;
      readonly schema: JsonObject;
      readonly examples: readonly ToolExample[];
    }
  | { readonly kind: "arguments"; readonly key: string; readonly schema: JsonObject; readonly args: unknown };

export type SchemaOutcome = ExamplesCheck | readonly ArgumentProblem[];

/** Whether a schema is compiled off the event loop (see OFF_THREAD_SCHEMA_VALUES). */
export function isLargeSchema(schema: JsonObject): boolean {
  return schemaValues(schema) > OFF_THREAD_SCHEMA_VALUES;
}

const worker = new JobWorker<SchemaJob, SchemaOutcome>(import.meta.url, "schema-worker");

/**
 * The examples checks of a registration's tools with large args schemas, run in the schema worker
 * before the registration's sliced steps (recordSteps takes them from here). Tools whose schema is
 * small or whose check fails in the worker for another reason are checked inline as before.
 */
export async function checkLargeExamples(inputs: readonly ToolInput[]): Promise<Map<number, ExamplesCheck>> {
  const checks = new Map<number, ExamplesCheck>();
  // Sizing thousands of schemas is itself tens of milliseconds: in slices, as the checks that follow.
  for (const index of (await runInSlices(largeSchemaTools(inputs), () => true)) ?? []) {
    const input = inputs[index] as ToolInput;
    const argsSchema = input.argsSchema as JsonObject;
    const examples = input.examples ?? [];
    try {
      const outcome = await worker.run({
        kind: "examples",
        name: fullName(input),
        schema: argsSchema,
        examples,
      });
      checks.set(index, outcome as ExamplesCheck);
    } catch {
      // Malformed input the inline steps reject with their own words, or a lost worker: check inline.
    }
  }
  return checks;
}

/** The tools whose examples are checked in the worker: a large args schema within the bounds. */
function* largeSchemaTools(inputs: readonly ToolInput[]): Generator<void, number[]> {
  const found: number[] = [];
  for (const [index, { argsSchema, examples }] of inputs.entries()) {
    yield;
    if (!examples?.length || !isObject(argsSchema) || !isLargeSchema(argsSchema)) continue;
    // Past the bounds: the inline steps refuse it before anything compiles.
    if (argsSchemaProblem(argsSchema) === undefined) found.push(index);
  }
  return found;
}

/** A dispatched call's argument problems against a large schema, compiled and cached in the worker by `key`. */
export function largeSchemaArgumentProblems(
  key: string,
  schema: JsonObject,
  args: unknown,
): Promise<readonly ArgumentProblem[]> {
  return worker.run({ kind: "arguments", key, schema, args }) as Promise<readonly ArgumentProblem[]>;
}
