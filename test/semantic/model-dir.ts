import { existsSync } from "node:fs";
import { resolve } from "node:path";

/** The shared test model, beside the repository (`../shared/models`) unless WAYFIND_MODELS says. */
export const MODEL_DIR = resolve(
  process.env.WAYFIND_MODELS ?? resolve(import.meta.dirname, "../../../shared/models"),
  "all-MiniLM-L6-v2",
);

/** Why the model tests skip, or undefined when the model is there. */
export const NO_MODEL = existsSync(MODEL_DIR)
  ? undefined
  : `no model at ${MODEL_DIR} (put ../shared/models beside the repository or set WAYFIND_MODELS)`;

if (NO_MODEL !== undefined) console.warn(`semantic tests skipped: ${NO_MODEL}`);
