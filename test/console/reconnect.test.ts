import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { launchChromium } from "../support/browser.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// A loopback server without credentials: the console needs no sign-in, and when the server goes
// away and comes back, its live events resume from their cursor.
const dataDir = mkdtempSync(join(tmpdir(), "wayfind-console-reconnect-"));
let wayfind: TestServer;
let browser: Browser;

beforeAll(async () => {
  writeFileSync(
    join(dataDir, "tools.jsonl"),
    ["crm.lookup_customer", "crm.update_customer"]
      .map((name) => JSON.stringify({ name, description: `${name} in the CRM`, loading_mode: "deferred" }))
      .join("\n"),
  );
  wayfind = await startTestServer({ catalogs: [{ path: "tools.jsonl" }] }, { dataDir });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await wayfind?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function activate(name: string) {
  return wayfind.grpc(ToolDiscoveryService).activateTools({
    caller: { tenantId: "acme", sessionId: "s-1", runId: "r-1" },
    names: [name],
  });
}

describe("the console on a loopback server without credentials", () => {
  it("opens without a sign-in, says when the server is gone, and resumes live events from the cursor", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${wayfind.baseUrl}/console#/events`);
      await expect.poll(() => page.getByRole("status").textContent()).toMatch(/^live/);
      await activate("crm.lookup_customer");
      const rows = (tool: string) => page.locator('[data-event-type="tool_activated"]', { hasText: tool });
      await rows("crm.lookup_customer").waitFor();

      const { port } = wayfind;
      await wayfind.stop({ keepData: true });
      await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/not reachable/);

      wayfind = await startTestServer({ catalogs: [{ path: "tools.jsonl" }], server: { port } }, { dataDir });
      await expect.poll(() => page.getByRole("status").textContent(), { timeout: 15_000 }).toMatch(/^live/);
      await activate("crm.update_customer");
      await rows("crm.update_customer").waitFor();
      // From the cursor: the event seen before the outage is not delivered again.
      expect(await rows("crm.lookup_customer").count()).toBe(1);
    } finally {
      await page.close();
    }
  }, 60_000);
});
