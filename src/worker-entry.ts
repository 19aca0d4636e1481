import { extname } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The URL to start worker module `name` (beside the module at `besideUrl`) from: the module itself
 * when built to JavaScript (dist/); from the TypeScript sources (tsx, vitest) a bootstrap that
 * registers tsx's loader first, since a worker's `--import` flag does not reach its entry module on
 * Node 20.
 */
export function workerEntry(besideUrl: string, name: string): URL {
  const extension = extname(fileURLToPath(besideUrl));
  const worker = new URL(`./${name}${extension}`, besideUrl);
  if (extension !== ".ts") return worker;
  const bootstrap = `import { register } from ${JSON.stringify(import.meta.resolve("tsx/esm/api"))};
register();
await import(${JSON.stringify(worker.href)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`);
}
