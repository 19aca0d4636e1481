/** The calls the fleet benches load (bench/replicas.ts, bench/workers.ts) over ghz: a read and two writes. */

export interface Workload {
  readonly label: string;
  /** Proto file under proto/ (ghz parses it). */
  readonly proto: string;
  readonly call: string;
  /** The request for one round; `round` keeps runs and idempotency keys of rounds apart. */
  readonly data: (round: string) => object;
}

export const WORKLOADS: readonly Workload[] = [
  {
    label: "SearchTools",
    proto: "wayfind/v1/tools.proto",
    call: "wayfind.v1.ToolDiscoveryService/SearchTools",
    data: () => ({ caller: { tenant_id: "acme" }, query: "create an issue in a repository" }),
  },
  {
    label: "ResolveTool (activates, new run per call)",
    proto: "wayfind/v1/tools.proto",
    call: "wayfind.v1.ToolDiscoveryService/ResolveTool",
    data: (round) => ({
      caller: { tenant_id: "acme", run_id: `${round}-{{.WorkerID}}-{{.RequestNumber}}` },
      name: "github.create_issue",
    }),
  },
  {
    label: "RecordUsage (new key per call)",
    proto: "wayfind/v1/usage.proto",
    call: "wayfind.v1.UsageService/RecordUsage",
    data: (round) => ({
      caller: { tenant_id: "acme" },
      provider: "PROVIDER_ANTHROPIC",
      model: "claude-sonnet-4-5",
      usage: { input_tokens: 1000, output_tokens: 100 },
      idempotency_key: `${round}-{{.WorkerID}}-{{.RequestNumber}}`,
    }),
  },
];
