// The worker thread that compiles large JSON Schemas (see schema-checks.ts): compiling one near the
// values bound would hold every other call waiting on the event loop.

import { LruCache } from "../lru.ts";
import { serveJobs } from "../worker-jobs.ts";
import type { SchemaJob, SchemaOutcome } from "./schema-checks.ts";
import { type ArgumentProblem, argumentChecker, checkExamples } from "./validate.ts";

/** Compiled argument checkers by tool key. */
const checkers = new LruCache<string, (args: unknown) => ArgumentProblem[]>(200);

function argumentProblems(key: string, schema: SchemaJob["schema"], args: unknown): ArgumentProblem[] {
  let checker = checkers.get(key);
  if (checker === undefined) {
    checker = argumentChecker(schema);
    checkers.set(key, checker);
  }
  return checker(args);
}

serveJobs<SchemaJob, SchemaOutcome>(
  (job) =>
    job.kind === "examples"
      ? checkExamples(job.name, job.schema, job.examples)
      : argumentProblems(job.key, job.schema, job.args),
  (error) => (error instanceof Error ? error.message : String(error)),
);
