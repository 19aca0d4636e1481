import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { launchChromium, screenshotPath, seriousViolations } from "../support/browser.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// The console in a real Chromium against a real server: signing in, the pages a credential's roles
// open, and each page reading what the API answers.
const operator = apiKey("operator", { roles: ["admin"] });
const acmeObserver = apiKey("acme-observer", { tenant: "acme", roles: ["observer"] });

const CATALOG = [
  { name: "crm.lookup_customer", description: "Look up a customer record by e-mail address." },
  { name: "billing.refund_invoice", description: "Refund a paid invoice to the customer's card." },
  { name: "weather.current", description: "Current weather conditions for a city." },
];

let wayfind: TestServer;
let browser: Browser;
let page: Page;
const dataDir = mkdtempSync(join(tmpdir(), "wayfind-console-"));

beforeAll(async () => {
  writeFileSync(
    join(dataDir, "tools.jsonl"),
    CATALOG.map((tool) => JSON.stringify({ ...tool, loading_mode: "deferred" })).join("\n"),
  );
  wayfind = await startTestServer(
    {
      catalogs: [{ path: "tools.jsonl" }],
      // Each tenant sees its own namespace and the shared weather tool, never the other's.
      visibility: [
        { match: { tenant: "acme" }, allow: ["crm.*", "weather.*"] },
        { match: { tenant: "bravo" }, allow: ["billing.*", "weather.*"] },
        { match: {}, allow: ["weather.*"] },
      ],
      auth: { allow_unauthenticated: false, api_keys: [operator.entry, acmeObserver.entry] },
    },
    { dataDir },
  );
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await wayfind?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(async () => {
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  return () => page.close();
});

async function signIn(secret: string): Promise<void> {
  await page.goto(`${wayfind.baseUrl}/console`);
  await page.getByLabel("API key").fill(secret);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
}

async function lookAs(tenant: string): Promise<void> {
  await page.getByLabel("As tenant").fill(tenant);
  await page.getByLabel("As tenant").press("Tab");
}

async function open(title: string): Promise<void> {
  await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: title }).click();
  await page.getByRole("heading", { level: 1, name: title }).waitFor();
}

describe("signing in", () => {
  it("asks for a key, then shows the pages the key's roles open, keeping the key in the tab only", async () => {
    await signIn(operator.secret);
    const pages = await page.getByRole("navigation", { name: "Pages" }).getByRole("link").allTextContents();
    expect(pages).toEqual([
      "Overview",
      "Catalog",
      "Search",
      "Live events",
      "Usage and cache",
      "Skills",
      "Keys",
    ]);
    expect(await page.evaluate('sessionStorage.getItem("wayfind.console.key")')).toBe(operator.secret);
    expect(await page.evaluate("localStorage.length")).toBe(0);
  });

  it("says why a wrong key does not sign in", async () => {
    await page.goto(`${wayfind.baseUrl}/console`);
    await page.getByLabel("API key").fill("wf_not-a-key-this-server-knows");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect
      .poll(() => page.getByRole("alert").textContent())
      .toMatch(/API key is not known to this server/);
  });

  it("gives an observer the events and usage, and no catalog", async () => {
    await signIn(acmeObserver.secret);
    const pages = await page.getByRole("navigation", { name: "Pages" }).getByRole("link").allTextContents();
    expect(pages).toEqual(["Overview", "Live events", "Usage and cache"]);
    expect(await page.getByLabel("As tenant").count()).toBe(0);
  });
});

describe("the catalog", () => {
  it("shows each tenant exactly the tools its visibility allows", async () => {
    await signIn(operator.secret);
    await open("Catalog");
    const toolNames = () =>
      page.getByRole("table", { name: "Tools" }).locator("tbody tr td:first-child").allTextContents();
    await lookAs("acme");
    await expect.poll(toolNames).toEqual(["crm.lookup_customer", "weather.current"]);
    await lookAs("bravo");
    await expect.poll(toolNames).toEqual(["billing.refund_invoice", "weather.current"]);
    await page.getByRole("button", { name: "billing.refund_invoice" }).click();
    await expect
      .poll(() => page.getByRole("region", { name: "Tool billing.refund_invoice" }).textContent())
      .toMatch(/catalog:tools\.jsonl/);
    await page.screenshot({ path: screenshotPath("catalog"), fullPage: true });
  });
});

describe("the search playground", () => {
  it("shows every part of each hit's score, as the API answers them", async () => {
    const expected = await clientWith(ToolDiscoveryService, wayfind.baseUrl, operator.secret).searchTools({
      caller: { tenantId: "acme" },
      query: "customer record",
      limit: 20,
      includeAlwaysLoaded: true,
    });
    await signIn(operator.secret);
    await lookAs("acme");
    await open("Search");
    const panel = page.getByRole("region", { name: "Request A" });
    await panel.getByLabel("Request").fill("customer record");
    await panel.getByRole("button", { name: "Search" }).click();
    const hit = panel.locator('tr[data-tool="crm.lookup_customer"]');
    await hit.waitFor();
    const first = expected.tools[0];
    expect(first?.name).toBe("crm.lookup_customer");
    expect(await hit.locator('[data-part="score"]').textContent()).toBe(first?.score.toFixed(3));
    expect(await hit.locator('[data-part="lexical"]').textContent()).toBe(first?.lexicalScore.toFixed(3));
    expect(await hit.locator('[data-part="semantic"]').textContent()).toBe(first?.semanticScore.toFixed(3));
    expect(await panel.locator("[data-match-quality]").textContent()).toBeTruthy();
    await page.screenshot({ path: screenshotPath("search"), fullPage: true });
  });
});

describe("live events", () => {
  it("shows an activation the moment it happens", async () => {
    await signIn(operator.secret);
    await open("Live events");
    await expect.poll(() => page.getByRole("status").textContent()).toMatch(/^live/);
    await clientWith(ToolDiscoveryService, wayfind.baseUrl, operator.secret).activateTools({
      caller: { tenantId: "acme", sessionId: "s-live", runId: "r-live" },
      names: ["crm.lookup_customer"],
    });
    const row = page.locator('[data-event-type="tool_activated"]', { hasText: "crm.lookup_customer" });
    await row.waitFor();
    expect(await row.textContent()).toContain("acme");
    await page.screenshot({ path: screenshotPath("events"), fullPage: true });
  });
});

describe("usage and cache", () => {
  it("charts the cost of a recorded model call on the day it was made", async () => {
    const recorded = await clientWith(UsageService, wayfind.baseUrl, operator.secret).recordUsage({
      caller: { tenantId: "acme", sessionId: "s-usage" },
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 1000n, outputTokens: 200n, cacheReadInputTokens: 9000n },
      idempotencyKey: "console-usage-1",
    });
    await signIn(operator.secret);
    await lookAs("acme");
    await open("Usage and cache");
    const costs = page.locator('figure[data-chart="Cost per day"] tbody td');
    await expect
      .poll(async () => Number(await costs.last().getAttribute("data-value")))
      .toBeCloseTo(recorded.costUsd ?? Number.NaN, 10);
    const model = page.locator('tr[data-model="claude-sonnet-4-5"] [data-cost]');
    expect(await model.textContent()).toMatch(/^\$0\.0087/);
    await page.screenshot({ path: screenshotPath("usage"), fullPage: true });
  });
});

describe("keys", () => {
  it("creates a key whose secret is shown once and signs in, then revokes it so it no longer does", async () => {
    await signIn(operator.secret);
    await open("Keys");
    const form = page.getByRole("region", { name: "Create a key" });
    await form.getByLabel("Id").fill("acme-console-observer");
    await form.getByLabel("For tenant").fill("acme");
    await form.getByLabel("agent").uncheck();
    await form.getByLabel("observer").check();
    await form.getByRole("button", { name: "Create" }).click();
    const secret = (await page.locator("[data-secret]").textContent()) ?? "";
    expect(secret).toMatch(/^wf_/);
    await page.screenshot({ path: screenshotPath("keys"), fullPage: true });

    const other = await browser.newPage();
    try {
      await other.goto(`${wayfind.baseUrl}/console`);
      await other.getByLabel("API key").fill(secret);
      await other.getByRole("button", { name: "Sign in" }).click();
      await other.getByRole("link", { name: "Live events" }).waitFor();

      await page.getByRole("button", { name: "Revoke acme-console-observer" }).click();
      await expect
        .poll(() => page.locator('tr[data-key="acme-console-observer"] [data-state]').textContent())
        .toBe("revoked");
      // A new load signs in again with the key the tab kept.
      await other.reload();
      await expect.poll(() => other.getByRole("alert").textContent()).toMatch(/has been revoked/);
    } finally {
      await other.close();
    }
  });
});

describe("accessibility", () => {
  it("has no serious or critical axe-core violation on any page", async () => {
    await signIn(operator.secret);
    await lookAs("acme");
    const found: string[] = [];
    for (const title of [
      "Overview",
      "Catalog",
      "Search",
      "Live events",
      "Usage and cache",
      "Skills",
      "Keys",
    ]) {
      await open(title);
      // Checked once the page's first answers are drawn (no figure still "…", nothing "Loading").
      await expect
        .poll(async () => (await page.locator(".card-value").allTextContents()).includes("…"))
        .toBe(false);
      await expect.poll(() => page.locator("main").textContent()).not.toMatch(/Loading…/);
      await page.screenshot({
        path: screenshotPath(title.toLowerCase().replaceAll(" ", "-")),
        fullPage: true,
      });
      for (const violation of await seriousViolations(page)) found.push(`${title}: ${violation}`);
    }
    expect(found).toEqual([]);
  }, 60_000);
});

describe("a first contact without surprises", () => {
  it("offers the operator the tenants the server knows of, and says where usage went while none is picked", async () => {
    await signIn(operator.secret);
    await expect
      .poll(() =>
        page
          .locator("#known-tenants option")
          .evaluateAll((options) => options.map((o) => o.getAttribute("value"))),
      )
      .toEqual(expect.arrayContaining(["acme", "bravo"]));
    await open("Usage and cache");
    await expect
      .poll(() => page.locator('[data-empty="usage"]').textContent())
      .toMatch(/pick one under “As tenant”/);
    await open("Overview");
    const hint = await page.locator("main .hint").textContent();
    expect(hint).toMatch(/pick one under “As tenant”/);
    // The charts follow every tenant while none is picked: the hint must not say otherwise.
    expect(hint).toMatch(/charts show every tenant's searches and activations/);
  });

  it("looks as the same tenant after a reload", async () => {
    await signIn(operator.secret);
    await lookAs("bravo");
    await page.reload();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    expect(await page.getByLabel("As tenant").inputValue()).toBe("bravo");
    await lookAs("");
    await page.reload();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    expect(await page.getByLabel("As tenant").inputValue()).toBe("");
  });

  it("calls the search page's default type what it is: hybrid", async () => {
    await signIn(operator.secret);
    await open("Search");
    const options = await page.getByLabel("Type").locator("option").allTextContents();
    expect(options[0]).toBe("hybrid (words and meaning)");
    expect(options).not.toContain("full text");
  });

  it("shows an observer only the tiles its role fills, each with its figure", async () => {
    await signIn(acmeObserver.secret);
    await expect
      .poll(async () => (await page.locator(".card-value").allTextContents()).includes("…"))
      .toBe(false);
    const labels = await page.locator(".card-label").allTextContents();
    expect(labels).not.toContain("Tools");
    expect(labels).toContain("Sources");
  });

  it("writes an empty chart's count axis in whole, distinct numbers", async () => {
    await signIn(operator.secret);
    await lookAs("nobody-yet");
    const ticks = page.locator('figure[data-chart="Activations per minute"] .chart-canvas');
    await expect.poll(() => ticks.getAttribute("data-value-ticks")).toBeTruthy();
    const labels = ((await ticks.getAttribute("data-value-ticks")) ?? "").split(" | ");
    expect(labels.every((label) => /^\d+$/.test(label))).toBe(true);
    expect(new Set(labels).size).toBe(labels.length);
  });

  it("names enum values in live events, not their numbers", async () => {
    await signIn(operator.secret);
    await open("Live events");
    await expect.poll(() => page.getByRole("status").textContent()).toMatch(/^live/);
    await clientWith(ToolDiscoveryService, wayfind.baseUrl, operator.secret).activateTools({
      caller: { tenantId: "bravo", sessionId: "s-enum", runId: "r-enum" },
      names: ["billing.refund_invoice"],
    });
    const row = page.locator('[data-event-type="tool_activated"]', { hasText: "billing.refund_invoice" });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/scope=run source=explicit/);
  });

  it("shows no search hit that scored nothing", async () => {
    await signIn(operator.secret);
    await lookAs("acme");
    await open("Search");
    const panel = page.getByRole("region", { name: "Request A" });
    await panel.getByLabel("Request").fill("weather in a city");
    await panel.getByRole("button", { name: "Search" }).click();
    await panel.locator("tr[data-tool]").first().waitFor();
    expect(await panel.locator('[data-part="score"]').allTextContents()).not.toContain("0.000");
  });

  it("says what to do on the Keys page of a server without keys (the demo's first start)", async () => {
    const demo = await startTestServer();
    try {
      await page.goto(`${demo.baseUrl}/console`);
      await page.getByRole("navigation", { name: "Pages" }).waitFor();
      await open("Keys");
      await expect
        .poll(() => page.locator('[data-empty="keys"]').textContent())
        .toMatch(/wayfind keys create/);
    } finally {
      await demo.stop();
    }
  });
});
