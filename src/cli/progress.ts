import type { LoadProgress } from "../skills/index.ts";

const WIDTH = 30;
/** Packs smaller than this load too fast for a bar to help. */
const MIN_FILES = 200;

/**
 * A one-line progress bar for skill packs loading at start, drawn on a terminal only (logs stay
 * clean JSON lines when stderr is a file or a pipe).
 */
export function skillPackProgressBar(
  stream: NodeJS.WriteStream,
): ((pack: string, progress: LoadProgress) => void) | undefined {
  if (!stream.isTTY) return undefined;
  return (pack, { phase, done, total }) => {
    if (total < MIN_FILES) return;
    const filled = Math.round((done / total) * WIDTH);
    const bar = `${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}`;
    stream.write(`\rskill pack ${pack} [${bar}] ${phase} ${done}/${total}`);
    if (phase === "write" && done === total) stream.write("\n");
  };
}
