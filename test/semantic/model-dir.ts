import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkoutPath } from "../../src/checkout.ts";

/** The model shipped in the repository, which a server uses when nothing else is configured. */
export const MODEL_DIR = checkoutPath("models/all-MiniLM-L6-v2");

/** A copy of the shipped model without its static tier (static/), in a new temporary folder. */
export function modelWithoutStaticTier(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "wayfind-model-")), "all-MiniLM-L6-v2");
  cpSync(MODEL_DIR, dir, { recursive: true, filter: (path) => !path.startsWith(join(MODEL_DIR, "static")) });
  return dir;
}
