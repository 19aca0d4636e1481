import { describe, expect, it } from "vitest";
import type { SchemaJob, SchemaOutcome } from "../src/discovery/schema-checks.ts";
import { JobWorker } from "../src/worker-jobs.ts";

/** The schema worker's module, as schema-checks.ts starts it. */
const SCHEMA_WORKER_BESIDE = new URL("../src/discovery/schema-checks.ts", import.meta.url).href;

const job: SchemaJob = {
  kind: "arguments",
  key: "t",
  schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
  args: { n: "one" },
};

describe("JobWorker", () => {
  it("ends its thread after a while without jobs, and starts a new one for the next job", async () => {
    const worker = new JobWorker<SchemaJob, SchemaOutcome>(SCHEMA_WORKER_BESIDE, "schema-worker", 200);
    try {
      expect(worker.running).toBe(false);
      expect(await worker.run(job)).toHaveLength(1);
      expect(worker.running).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(worker.running).toBe(false);
      expect(await worker.run(job)).toHaveLength(1);
      expect(worker.running).toBe(true);
    } finally {
      await worker.close();
    }
  });
});
