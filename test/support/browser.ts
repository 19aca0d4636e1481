import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Where Debian's chromium package (which .ci/run installs) puts the browser; WAYFIND_CHROMIUM overrides. */
const CHROMIUM_PATHS = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];

/** Headless Chromium from the system (playwright's own download is not reachable here). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = [process.env.WAYFIND_CHROMIUM, ...CHROMIUM_PATHS].find(
    (path): path is string => path !== undefined && path !== "" && existsSync(path),
  );
  if (executablePath === undefined)
    throw new Error(
      "no Chromium found: install Debian's chromium (apt-get install chromium; .ci/run does) or set WAYFIND_CHROMIUM",
    );
  return chromium.launch({ executablePath });
}

/** Screenshots the tests take of each console page (test-results/ is not checked in). */
export function screenshotPath(name: string): string {
  const dir = join(process.cwd(), "test-results", "console");
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}.png`);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core's serious and critical accessibility violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const source = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  // Evaluated over the DevTools protocol: the console's CSP (rightly) refuses injected script tags.
  await page.evaluate(source);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: () => Promise<{ violations: AxeViolation[] }> } })
      .axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}
