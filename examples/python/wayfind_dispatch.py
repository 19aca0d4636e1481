"""The dispatch-mode runtime loop: the model sees a tools array that never changes (the discovery
tools, `tool_call` and the always-visible tools) and calls every deferred tool through
`tool_call {name, arguments}`. The runtime checks each such call with CheckToolCall: a valid one runs
the tool (activating it on first use), an invalid one goes back to the model as an error result that
says what to fix. A tool wayfind got from an MCP server (source `mcp:<server>`) is executed by wayfind
with CallTool; any other the runtime runs itself. The tools array stays byte-identical, so an
activation never re-writes the provider's prompt cache.

A real agent gets the model's tool calls from the provider's response; this example replays a fixed
script of them so that it runs without a model.

    python wayfind_dispatch.py --addr 127.0.0.1:50051
"""

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import grpc
from google.protobuf import struct_pb2

from wayfind.v1 import common_pb2, tools_pb2, tools_pb2_grpc
from wayfind_example import TIMEOUT_S, agent_run, billing_tools, json_struct, json_value

# What a model typically does: search, load the definition, call it (first with arguments that do not
# fit, then repaired after reading the error). Each entry is (tool of the payload, its input).
SCRIPT: list[tuple[str, dict]] = [
    ("tool_search", {"query": "refund a payment", "limit": 3}),
    ("tool_get", {"names": ["billing.refund_payment"]}),
    ("tool_call", {"name": "billing.refund_payment", "arguments": {"amount_cents": 0}}),
    ("tool_call", {"name": "billing.refund_payment", "arguments": {"payment_id": "pay_123", "amount_cents": 500}}),
]

# The tools this runtime can execute, by wayfind name: wayfind finds, checks and activates tools;
# running them is the runtime's job, except for the tools of MCP servers (CallTool).
IMPLEMENTATIONS: dict[str, Callable[[dict], dict]] = {
    "billing.refund_payment": lambda args: {"refund_id": "re_1", **args},
}


@dataclass
class ToolResult:
    """What goes back to the model for one call (Anthropic: a tool_result block)."""

    content: str
    is_error: bool = False


class DispatchRuntime:
    """Answers the model's tool calls with wayfind."""

    def __init__(self, channel: grpc.Channel, caller: common_pb2.CallerContext) -> None:
        self.tools = tools_pb2_grpc.ToolDiscoveryServiceStub(channel)
        self.caller = caller

    def render(self) -> tuple[str, str]:
        """The tools array and the system prompt, in dispatch mode: neither changes when a tool is
        activated, so the provider's cache of everything after them (the conversation) is never
        re-written."""
        payload = self.tools.RenderToolPayload(
            tools_pb2.RenderToolPayloadRequest(caller=self.caller, provider=common_pb2.PROVIDER_ANTHROPIC, dispatch=True),
            timeout=TIMEOUT_S,
        )
        prompt = self.tools.RenderToolPrompt(
            tools_pb2.RenderToolPromptRequest(caller=self.caller, dispatch=True), timeout=TIMEOUT_S
        )
        return payload.payload_json, prompt.text

    def handle(self, tool: str, args: dict) -> ToolResult:
        """One tool call. What the model can fix comes back as an error result; a failure of wayfind
        itself (unreachable, refused credentials) raises."""
        try:
            if tool == "tool_search":
                request = tools_pb2.SearchToolsRequest(caller=self.caller, query=args["query"], limit=args.get("limit", 0))
                found = self.tools.SearchTools(request, timeout=TIMEOUT_S)
                return ToolResult("\n".join(f"{t.name}: {t.description}" for t in found.tools))
            if tool == "tool_get":
                request = tools_pb2.GetToolsRequest(
                    caller=self.caller, names=args["names"], include_schemas=True, include_examples=True
                )
                # The definitions enter the conversation here, not the tools array.
                got = self.tools.GetTools(request, timeout=TIMEOUT_S)
                return ToolResult(json.dumps([definition(t) for t in got.tools], sort_keys=True))
            if tool == "tool_call":
                return self.dispatch(args["name"], args.get("arguments", {}))
        except grpc.RpcError as err:
            if err.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
                return ToolResult(err.details(), is_error=True)
            raise
        return ToolResult(f"no tool named {tool!r}", is_error=True)

    def dispatch(self, name: str, arguments: dict) -> ToolResult:
        """Checks a tool_call with wayfind and runs the tool when its arguments fit: wayfind executes the
        tools of MCP servers, the runtime the others."""
        checked = self.tools.CheckToolCall(
            tools_pb2.CheckToolCallRequest(caller=self.caller, name=name, arguments=json_struct(arguments)),
            timeout=TIMEOUT_S,
        )
        if not checked.valid:
            return ToolResult(checked.repair_message, is_error=True)
        if checked.tool.source.startswith("mcp:"):
            return self.call_tool(name, arguments)
        run = IMPLEMENTATIONS.get(checked.tool.name)
        if run is None:
            return ToolResult(f"{name} cannot run here; use another tool", is_error=True)
        return ToolResult(f"{json.dumps(run(arguments), sort_keys=True)} (activated={checked.activated})")

    def call_tool(self, name: str, arguments: dict) -> ToolResult:
        """Has wayfind execute a tool of an MCP server (CallTool forwards `tools/call` upstream) and gives
        the model the result as the server sent it; a failure the tool reports (is_error) is the
        model's to read."""
        called = self.tools.CallTool(
            tools_pb2.CallToolRequest(caller=self.caller, name=name, arguments=json_struct(arguments)),
            timeout=TIMEOUT_S,
        )
        return ToolResult(content_text(called.content), is_error=called.is_error)


def content_text(blocks: Iterable[struct_pb2.Struct]) -> str:
    """A result's content blocks as this runtime's string results carry them: the text of each text
    block, any other block (image, audio, resource) as its JSON."""
    parts = [json_value(block) for block in blocks]
    return "\n".join(p["text"] if p.get("type") == "text" else json.dumps(p, sort_keys=True) for p in parts)


def definition(tool: tools_pb2.Tool) -> dict:
    """What tool_get returns to the model: name, description, input schema, examples."""
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": json_value(tool.args_schema),
        "examples": [json_value(e.args) for e in tool.examples],
    }


def main() -> None:
    with agent_run(__doc__) as (channel, caller):
        tools_pb2_grpc.ToolDiscoveryServiceStub(channel).RegisterTools(
            tools_pb2.RegisterToolsRequest(
                caller=caller, source="example", namespace="billing", tools=billing_tools(), replace_source=True
            ),
            timeout=TIMEOUT_S,
        )

        runtime = DispatchRuntime(channel, caller)
        before = runtime.render()
        names = [t["name"] for t in json.loads(before[0])]
        discovery = sorted(n for n in names if n in ("tool_search", "tool_get", "tool_call"))
        print(f"payload: {len(names)} tools, discovery: {', '.join(discovery)}")
        for tool, tool_args in SCRIPT:
            result = runtime.handle(tool, tool_args)
            print(f"{tool} -> {'error' if result.is_error else 'result'}: {result.content.replace(chr(10), ' | ')}")
        print(f"tools array and system prompt byte-identical after the activation: {runtime.render() == before}")


if __name__ == "__main__":
    main()
