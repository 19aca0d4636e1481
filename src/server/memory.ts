import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Full garbage collections now, without `--expose-gc` on the command line (the server runs as
 * `node bin/wayfind.js`): the flag set at runtime defines `gc` in contexts created after it.
 * Two rounds: after a large build the first leaves much of old space as sparse pages, resident but
 * mostly empty; the second compacts them.
 */
export function collectGarbage(rounds = 2): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  setFlagsFromString("--no-expose-gc");
  for (let i = 0; i < rounds; i++) gc();
}
