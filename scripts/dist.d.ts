/** Types of scripts/dist.js (plain JavaScript: bin/wayfind.js runs it before any TypeScript can). */
export interface InputFingerprint {
  readonly size: number;
  readonly mtimeMs: number;
  readonly sha256: string;
}
export declare const MANIFEST: string;
export declare const DIST_CLI: string;
export declare function inputFiles(root: string): string[];
export declare function fingerprint(root: string): Record<string, InputFingerprint>;
export declare function distState(root: string): "fresh" | "stale" | "missing";
