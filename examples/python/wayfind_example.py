"""The smallest useful wayfind client: checks that the server is up, records the token usage of one
model call and prints the tenant's usage summary.

    python wayfind_example.py --addr 127.0.0.1:50051
"""

import argparse
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from wayfind.v1 import common_pb2, usage_pb2, usage_pb2_grpc

TIMEOUT_S = 10  # every call gets a deadline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="wayfind server address (host:port)")
    args = parser.parse_args()

    # wayfind speaks plaintext HTTP/2 (h2c); put TLS and authentication in front of it in production.
    with grpc.insecure_channel(args.addr) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S)
        print("health:", health_pb2.HealthCheckResponse.ServingStatus.Name(health.status))

        # Who is asking. wayfind trusts this as sent: run it behind a boundary that sets it.
        caller = common_pb2.CallerContext(tenant_id="acme", session_id="session-1", run_id="run-1")

        usage = usage_pb2_grpc.UsageServiceStub(channel)
        recorded = usage.RecordUsage(
            usage_pb2.RecordUsageRequest(
                caller=caller,
                provider=common_pb2.PROVIDER_ANTHROPIC,
                model="claude-sonnet-4-5-20250929",
                usage=usage_pb2.Usage(input_tokens=1200, output_tokens=350, cache_read_input_tokens=8000),
                # One key per model call (e.g. the provider's response id): retries are counted once.
                idempotency_key=f"example-{time.time_ns()}",
            ),
            timeout=TIMEOUT_S,
        )
        if recorded.HasField("cost_usd"):
            print(f"recorded: cost ${recorded.cost_usd:.6f} (duplicate={recorded.duplicate})")
        else:
            print(f"recorded: cost unknown ({recorded.unknown_cost_reason})")

        summary = usage.GetUsageSummary(usage_pb2.GetUsageSummaryRequest(caller=caller), timeout=TIMEOUT_S)
        t = summary.totals
        print(f"summary: {t.calls} calls, ${t.total_cost_usd:.6f}, cache hit rate {100 * t.cache_hit_rate:.1f}%")

        # Tool and skill discovery go through the same channel, e.g.
        #   tools = tools_pb2_grpc.ToolDiscoveryServiceStub(channel)
        #   skills = skills_pb2_grpc.SkillServiceStub(channel)


if __name__ == "__main__":
    main()
