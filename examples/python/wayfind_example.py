"""A small wayfind client: checks that the server is up, records the token usage of one model call,
then walks through one agent turn of tool and skill discovery: register a deferred catalog, render
the tool prompt, search, resolve the tool the model called (seeing its activation event), report
that it succeeded, render again and fetch the skills relevant to the task.

    python wayfind_example.py --addr 127.0.0.1:50051
    python wayfind_example.py --addr wayfind.internal:50051 --ca ca.pem --api-key "$WAYFIND_API_KEY"
"""

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
from google.protobuf import json_format, struct_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from wayfind.v1 import (
    common_pb2,
    events_pb2,
    skills_pb2,
    skills_pb2_grpc,
    tools_pb2,
    tools_pb2_grpc,
    usage_pb2,
    usage_pb2_grpc,
)

TIMEOUT_S = 10  # every call gets a deadline


def main() -> None:
    with agent_run(__doc__) as (channel, caller):
        record_usage(channel, caller)
        discover(channel, caller)


@contextmanager
def agent_run(doc: str) -> Iterator[tuple[grpc.Channel, common_pb2.CallerContext]]:
    """Parses --addr/--ca/--api-key, connects, prints the server's health and yields the channel with
    the caller of one agent run."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="wayfind server address (host:port)")
    parser.add_argument("--ca", help="PEM file of the CA that signed the server's certificate (enables TLS)")
    parser.add_argument("--api-key", default=os.environ.get("WAYFIND_API_KEY"), help="API key (default $WAYFIND_API_KEY)")
    args = parser.parse_args()

    with open_channel(args.addr, args.ca, args.api_key) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S)
        print("health:", health_pb2.HealthCheckResponse.ServingStatus.Name(health.status))

        # Who is asking. With an API key the key decides the tenant (another one is refused); without
        # one (a local server) it is trusted as sent. One run id per agent run: run-scoped tool
        # activations belong to it.
        yield channel, common_pb2.CallerContext(tenant_id="acme", session_id="session-1", run_id=f"run-{time.time_ns()}")


def open_channel(addr: str, ca_file: "str | None", api_key: "str | None") -> grpc.Channel:
    """TLS (trusting ca_file) with the API key on every call; or plaintext HTTP/2 (h2c) for a local server."""
    if ca_file is None:
        return grpc.insecure_channel(addr)
    with open(ca_file, "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    if api_key:
        credentials = grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(api_key))
    return grpc.secure_channel(addr, credentials)


def record_usage(channel: grpc.Channel, caller: common_pb2.CallerContext) -> None:
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


def discover(channel: grpc.Channel, caller: common_pb2.CallerContext) -> None:
    tools = tools_pb2_grpc.ToolDiscoveryServiceStub(channel)

    # 1. Register a catalog at runtime for the caller's tenant (only that tenant sees it; unchanged
    # input is a no-op, so do it on every start).
    reg = tools.RegisterTools(
        tools_pb2.RegisterToolsRequest(
            caller=caller, source="example", namespace="billing", tools=billing_tools(), replace_source=True
        ),
        timeout=TIMEOUT_S,
    )
    print(f"registered: {reg.added} added, {reg.updated} updated, {reg.unchanged} unchanged")

    # 2. The tools block of the system prompt: visible tools, and how to find the deferred ones.
    before = tools.RenderToolPrompt(tools_pb2.RenderToolPromptRequest(caller=caller), timeout=TIMEOUT_S)
    print(f"prompt: {len(before.visible_tools)} tools visible, {before.deferred_count} deferred")

    # 3. The model calls tool_search.
    found = tools.SearchTools(
        tools_pb2.SearchToolsRequest(caller=caller, query="refund a payment", limit=3), timeout=TIMEOUT_S
    )
    if not found.tools:
        raise SystemExit("search tools: no match")
    best = found.tools[0]
    print(f"search: {best.name} (score {best.score:.2f})")

    # 4. The model calls the tool: ResolveTool returns its definition and activates it for the run.
    # Activations are also streamed as events, e.g. to a dashboard; watch before resolving.
    events = tools.WatchToolEvents(
        tools_pb2.WatchToolEventsRequest(
            caller=caller,
            filter=events_pb2.EventFilter(
                event_types=[events_pb2.EVENT_TYPE_TOOL_ACTIVATED], session_id=caller.session_id, tool=best.name
            ),
        ),
        timeout=TIMEOUT_S,
    )
    try:
        next(events)  # a status comes first: the stream is live
        resolved = tools.ResolveTool(tools_pb2.ResolveToolRequest(caller=caller, name=best.name), timeout=TIMEOUT_S)
        print(f"resolved: {resolved.tool.name} (activated={resolved.activated})")
        for msg in events if resolved.activated else ():
            if msg.WhichOneof("message") != "event" or msg.event.run_id != caller.run_id:
                continue  # a status or heartbeat, or another run of the session
            activated = msg.event.tool_activated
            scope = events_pb2.ToolActivated.Scope.Name(activated.scope).removeprefix("SCOPE_").lower()
            source = events_pb2.ToolActivated.Source.Name(activated.source).removeprefix("SOURCE_").lower()
            print(f"event: {msg.event.type} {activated.tool} (scope {scope}, source {source})")
            break
    finally:
        events.cancel()

    # 5. The runtime ran the tool and it did what the request needed: report it, naming the search
    # the tool came from, so the tenant's ranking learns from the choice. One key per report (e.g.
    # the model's tool call id): a retried report is acknowledged and recorded once.
    outcome = common_pb2.OUTCOME_SUCCEEDED
    reported = tools.ReportToolOutcome(
        tools_pb2.ReportToolOutcomeRequest(
            caller=caller,
            search_id=found.search_id,
            tool=best.name,
            outcome=outcome,
            note="refunded pay_123",
            idempotency_key=f"outcome-{time.time_ns()}",
        ),
        timeout=TIMEOUT_S,
    )
    outcome_name = common_pb2.Outcome.Name(outcome).removeprefix("OUTCOME_").lower()
    print(f"outcome: {best.name} {outcome_name} (learned={reported.learned}, duplicate={reported.duplicate})")

    # 6. Render again: the tool is appended, so the previous prompt stays a prefix (cache hits).
    after = tools.RenderToolPrompt(tools_pb2.RenderToolPromptRequest(caller=caller), timeout=TIMEOUT_S)
    is_prefix = after.text.startswith(before.text)
    print(f"prompt: {', '.join(after.visible_tools)} (previous prompt is a prefix: {is_prefix})")

    # 7. Before working on a task: the relevant skills as one block to inject, within a token budget.
    budget = 500
    relevant = skills_pb2_grpc.SkillServiceStub(channel).GetRelevantSkills(
        skills_pb2.GetRelevantSkillsRequest(
            caller=caller, task="the API returns 429 Too Many Requests", top_k=2, max_tokens=budget
        ),
        timeout=TIMEOUT_S,
    )
    print(f"skills: {', '.join(relevant.skill_names)} ({relevant.token_estimate} of {budget} tokens)")


def billing_tools() -> list[tools_pb2.Tool]:
    """A small catalog. Deferred tools stay out of the prompt until the model finds them with
    tool_search or calls them; args are JSON Schema, examples teach the argument shapes."""

    def tool(name, description, side_effect, properties, required, example):
        return tools_pb2.Tool(
            name=name,
            description=description,
            side_effect=side_effect,
            loading_mode=tools_pb2.LOADING_MODE_DEFERRED,
            args_schema=json_struct({"type": "object", "properties": properties, "required": required}),
            examples=[tools_pb2.ToolExample(args=json_struct(example))],
        )

    return [
        tool(
            "refund_payment",
            "Refund a captured payment, in full or in part.",
            tools_pb2.SIDE_EFFECT_WRITE,
            {"payment_id": {"type": "string"}, "amount_cents": {"type": "integer", "minimum": 1}},
            ["payment_id"],
            {"payment_id": "pay_123", "amount_cents": 500},
        ),
        tool(
            "get_invoice",
            "Fetch an invoice with its line items.",
            tools_pb2.SIDE_EFFECT_READ,
            {"invoice_id": {"type": "string"}},
            ["invoice_id"],
            {"invoice_id": "in_42"},
        ),
        tool(
            "list_subscriptions",
            "List a customer's subscriptions and their status.",
            tools_pb2.SIDE_EFFECT_READ,
            {"customer_id": {"type": "string"}, "active_only": {"type": "boolean"}},
            ["customer_id"],
            {"customer_id": "cus_7", "active_only": True},
        ),
    ]


def json_struct(value: dict) -> struct_pb2.Struct:
    return json_format.ParseDict(value, struct_pb2.Struct())


def json_value(message: struct_pb2.Struct) -> dict:
    """A Struct (a schema, arguments, a content block) as the JSON that was sent: protobuf keeps every
    number of a Struct as a double, so `"minimum": 1` comes back 1.0; whole numbers are ints again."""

    def whole(value):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {key: whole(item) for key, item in value.items()}
        if isinstance(value, list):
            return [whole(item) for item in value]
        return value

    return whole(json_format.MessageToDict(message))


if __name__ == "__main__":
    main()
