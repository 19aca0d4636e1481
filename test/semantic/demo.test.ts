import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SemanticStatus } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { MODEL_DIR } from "./model-dir.ts";

const DEMO = join(import.meta.dirname, "../../demo");

/** The demo's catalogs and tool search settings (demo/wayfind.yaml), with the shipped model. */
function demoConfig(): Record<string, unknown> {
  const demo = parse(readFileSync(join(DEMO, "wayfind.yaml"), "utf8")) as {
    catalogs: { path: string }[];
    tool_search: object;
  };
  return {
    catalogs: demo.catalogs.map((c) => ({ ...c, path: join(DEMO, c.path) })),
    tool_search: { ...demo.tool_search, semantic: { model_dir: MODEL_DIR } },
  };
}

describe("the demo catalog, ranked by words and meaning", () => {
  let wayfind: TestServer;
  beforeAll(async () => {
    wayfind = await startTestServer(demoConfig());
  }, 60_000);
  afterAll(() => wayfind?.stop());

  /** Searches until every tool has its vector and the request was ranked by meaning. */
  async function search(query: string) {
    const client = wayfind.grpc(ToolDiscoveryService);
    for (let attempt = 0; attempt < 300; attempt++) {
      const response = await client.searchTools({ caller: { tenantId: "acme" }, query });
      if (response.semanticStatus === SemanticStatus.READY) return response;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("tool vectors never became ready");
  }

  it('ranks create_pull_request first for "open a pull request", above merge_pull_request by meaning', async () => {
    const { tools } = await search("open a pull request");
    expect(tools[0]?.name).toBe("github.create_pull_request");
    const merge = tools.find((t) => t.name === "github.merge_pull_request");
    expect(merge).toBeDefined();
    expect(tools[0]?.semanticScore).toBeGreaterThan(merge?.semanticScore ?? 1);
    expect(tools[0]?.semanticScore).toBeLessThan(1);
  });

  it("gives the tools a request is close to scores of their own: no two share a semantic score", async () => {
    const { tools } = await search("open a pull request");
    const scores = tools.map((t) => t.semanticScore);
    expect(new Set(scores).size).toBe(scores.length);
  });

  it("reads a misspelled word no tool has as the model's word: an umbrel is an umbrella", async () => {
    const typed = await search("should I take an umbrel tomorrow");
    const meant = await search("should I take an umbrella tomorrow");
    expect(typed.tools[0]?.name).toBe("get_weather");
    expect(typed.tools[0]?.semanticScore).toBeGreaterThan(0);
    expect(typed.tools[0]?.semanticScore).toBe(meant.tools[0]?.semanticScore);
  });
});
