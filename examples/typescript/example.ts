/**
 * An agent runtime's use of wayfind from TypeScript: find a deferred tool, fetch its schema, activate
 * it for the run, and record the model call's usage. Run against a server (`npm start`):
 *   npx tsx examples/typescript/example.ts --addr http://127.0.0.1:50051
 *   npx tsx examples/typescript/example.ts --addr https://wayfind.internal:50051 --ca ca.pem --api-key "$WAYFIND_API_KEY"
 * Outside this repository, import from "@wayfind/client" (clients/typescript) instead.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { connectWayfind, MatchQuality, Provider } from "../../clients/typescript/src/index.ts";

const { values } = parseArgs({
  options: {
    addr: { type: "string", default: "http://127.0.0.1:50051" },
    // A server on a network: TLS (trusting a private CA) and an API key; a local one needs neither.
    ca: { type: "string" },
    "api-key": { type: "string", default: process.env.WAYFIND_API_KEY },
  },
});
const { tools, usage } = connectWayfind(values.addr ?? "", {
  ...(values["api-key"] ? { apiKey: values["api-key"] } : {}),
  ...(values.ca ? { ca: readFileSync(values.ca, "utf8") } : {}),
});
// One run id per agent run: run-scoped activations belong to it.
const caller = { tenantId: "acme", runId: `example-${Date.now()}` };

const found = await tools.searchTools({ caller, query: "create a pull request from my branch", limit: 3 });
const best = found.tools[0];
if (!best || found.matchQuality !== MatchQuality.GOOD) {
  console.log("no tool fits the request");
  process.exit(1);
}
console.log(`found: ${best.name} (score ${best.score.toFixed(2)})`);

const got = await tools.getTools({ caller, names: [best.name], includeSchemas: true });
console.log(`schema: ${Object.keys(got.tools[0]?.argsSchema?.properties ?? {}).join(", ")}`);

const activated = await tools.activateTools({ caller, names: [best.name] });
console.log(`activated: ${activated.activated.join(", ")}`);

const recorded = await usage.recordUsage({
  caller,
  provider: Provider.ANTHROPIC,
  model: "claude-sonnet-4-5",
  usage: { inputTokens: 1200n, outputTokens: 150n, cacheReadInputTokens: 9000n },
  idempotencyKey: `${caller.runId}-call-1`,
});
console.log(`recorded: cost $${recorded.costUsd?.toFixed(6) ?? "unknown"}`);
