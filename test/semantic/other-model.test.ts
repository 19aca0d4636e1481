import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SemanticStatus } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { writeToyModel } from "../support/toy-model.ts";

/** Concepts of the toy multilingual model: the same meaning in English, German, French, Chinese. */
const CONCEPTS = [
  ["weather", "forecast", "wetter", "vorhersage", "météo", "prévisions", "天", "气"],
  ["currency", "money", "convert", "währung", "geld", "umrechnen", "devise", "argent", "货", "币"],
  ["email", "mail", "send", "senden", "envoyer", "courriel", "邮", "件"],
];

const CATALOG = [
  { name: "get_forecast", description: "Weather forecast for a city" },
  { name: "convert_currency", description: "Convert money between currencies" },
  { name: "send_email", description: "Send an email" },
];

async function search(server: TestServer, query: string) {
  const client = server.grpc(ToolDiscoveryService);
  for (let attempt = 0; attempt < 100; attempt++) {
    const response = await client.searchTools({ caller: { tenantId: "acme" }, query });
    if (response.semanticStatus === SemanticStatus.READY) return response;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("tool vectors never became ready");
}

describe("another model of the same folder layout, by configuration alone", () => {
  it("serves hybrid search with a multilingual model of another vocabulary and dimension", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-other-model-"));
    writeToyModel(join(dir, "multilingual"), CONCEPTS);
    writeFileSync(join(dir, "tools.jsonl"), CATALOG.map((t) => JSON.stringify(t)).join("\n"));
    const server = await startTestServer(
      { catalogs: [{ path: "tools.jsonl" }], tool_search: { semantic: { model_dir: "multilingual" } } },
      { dataDir: dir },
    );
    try {
      // None of these words is in a tool's name or description: only the model can match them.
      for (const [query, tool] of [
        ["Wie wird das Wetter morgen?", "get_forecast"],
        ["明天的天气", "get_forecast"],
        ["Geld umrechnen bitte", "convert_currency"],
        ["envoyer un courriel à Paul", "send_email"],
      ] as const) {
        const found = await search(server, query);
        expect(found.tools[0]?.name, query).toBe(tool);
        expect(found.tools[0]?.semanticScore, query).toBeGreaterThan(0);
      }
    } finally {
      await server.stop();
    }
  });
});
