import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The checkout's root: this file runs as src/checkout.ts (tsx) or as the built dist/src/checkout.js. */
const ROOT = new URL(import.meta.url.endsWith(".ts") ? "../" : "../../", import.meta.url);

/** A path inside the checkout (`demo/wayfind.yaml`, the shipped model), wherever the code runs from. */
export function checkoutPath(relative: string): string {
  return fileURLToPath(new URL(relative, ROOT));
}

/** The version in package.json (the checkout's root), as `wayfind --version` prints it. */
export function wayfindVersion(): string {
  const manifest = JSON.parse(readFileSync(checkoutPath("package.json"), "utf8")) as { version?: string };
  return manifest.version ?? "unknown";
}
