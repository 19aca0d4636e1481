/** Types of scripts/console-build.js (plain JavaScript: `npm run build` runs it without tsx). */
export declare function buildConsole(outDir?: string): Promise<number>;
