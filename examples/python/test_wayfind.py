"""Runs the Python client against the real wayfind server.

A session fixture starts `node bin/wayfind.js serve --port 0` from the repository root
(npm ci must have run), the tests talk to it over native gRPC, and teardown stops it with SIGTERM
and requires a clean exit. Run with `bash scripts/test-python.sh`.
"""

import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import grpc
import httpx2
import pytest
from google.protobuf import descriptor_pb2, json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

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
from wayfind_dispatch import DispatchRuntime, ToolResult
from wayfind_example import billing_tools, json_struct

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 15
RPC_TIMEOUT_S = 10
SONNET = "claude-sonnet-4-5-20250929"


class Server:
    """A wayfind server process; `log` collects its output for failure messages."""

    def __init__(self, data_dir: Path, *flags: str) -> None:
        node = shutil.which("node")
        assert node, "node is needed to run the wayfind server"
        self.log: list[str] = []
        self._port: queue.Queue[int] = queue.Queue()
        self.proc = subprocess.Popen(
            [node, "bin/wayfind.js", "serve", "--port", "0", "--data-dir", str(data_dir), *flags],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        found = False
        for line in self.proc.stdout:
            self.log.append(line)
            if found:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("msg") == "listening" and entry.get("port"):
                found = True
                self._port.put(int(entry["port"]))

    def output(self) -> str:
        return "".join(self.log)

    def wait_listening(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                return f"127.0.0.1:{self._port.get(timeout=0.2)}"
            except queue.Empty:
                if self.proc.poll() is not None:
                    self._reader.join(timeout=5)
                    pytest.fail(f"server exited ({self.proc.returncode}) before listening:\n{self.output()}")
        self.kill()
        pytest.fail(f'server did not log "listening" within {START_TIMEOUT_S}s:\n{self.output()}')

    def stop(self) -> int:
        """SIGTERM, then the exit status (killing it if it does not exit in time)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"server still running {STOP_TIMEOUT_S}s after SIGTERM:\n{self.output()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    yield from serve(Server(tmp_path_factory.mktemp("wayfind-data")))


def serve(srv: Server):
    """Waits for the server to listen, yields it, then stops it and requires a clean exit."""
    try:
        srv.addr = srv.wait_listening()
        yield srv
        # Teardown: SIGTERM drains the server, which must exit 0.
        code = srv.stop()
        srv._reader.join(timeout=5)
        assert code == 0, f"server exited with {code} after SIGTERM, want 0:\n{srv.output()}"
    finally:
        srv.kill()


@pytest.fixture(scope="session")
def channel(server):
    with grpc.insecure_channel(server.addr) as ch:
        grpc.channel_ready_future(ch).result(timeout=RPC_TIMEOUT_S)
        yield ch


@pytest.fixture
def usage(channel):
    return usage_pb2_grpc.UsageServiceStub(channel)


@pytest.fixture
def tools(channel):
    return tools_pb2_grpc.ToolDiscoveryServiceStub(channel)


@pytest.fixture
def skills(channel):
    return skills_pb2_grpc.SkillServiceStub(channel)


@pytest.fixture
def caller(request):
    """A tenant of its own for each test, so their summaries don't mix."""
    return common_pb2.CallerContext(
        tenant_id=f"py-{request.node.name}", user_id="user-1", session_id="session-1", run_id="run-1"
    )


def record_request(caller, key, **usage_fields):
    return usage_pb2.RecordUsageRequest(
        caller=caller,
        provider=common_pb2.PROVIDER_ANTHROPIC,
        model=SONNET,
        usage=usage_pb2.Usage(**usage_fields),
        idempotency_key=key,
    )


def summary_totals(usage, caller):
    return usage.GetUsageSummary(usage_pb2.GetUsageSummaryRequest(caller=caller), timeout=RPC_TIMEOUT_S).totals


def test_health_serving(channel):
    health = health_pb2_grpc.HealthStub(channel)
    for service in ["", "wayfind.v1.UsageService", "wayfind.v1.ToolDiscoveryService", "wayfind.v1.SkillService"]:
        resp = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=RPC_TIMEOUT_S)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING, service
    with pytest.raises(grpc.RpcError) as err:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=RPC_TIMEOUT_S)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def reflect(channel, request):
    """One reflection request on a stream of its own: the first answer, then the stream is cancelled."""
    call = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(iter([request]), timeout=RPC_TIMEOUT_S)
    try:
        return next(call)
    finally:
        call.cancel()


def test_reflection_lists_wayfind_services(channel):
    responses = [
        reflect(channel, reflection_pb2.ServerReflectionRequest(list_services="")),
        reflect(channel, reflection_pb2.ServerReflectionRequest(file_containing_symbol="wayfind.v1.UsageService")),
    ]
    for resp in responses:
        assert not resp.HasField("error_response"), resp.error_response

    names = {s.name for s in responses[0].list_services_response.service}
    assert {
        "wayfind.v1.ToolDiscoveryService",
        "wayfind.v1.SkillService",
        "wayfind.v1.UsageService",
        "grpc.health.v1.Health",
    } <= names

    # The descriptor served for a service is the real one, with its methods.
    methods = set()
    for raw in responses[1].file_descriptor_response.file_descriptor_proto:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        for svc in fd.service:
            if f"{fd.package}.{svc.name}" == "wayfind.v1.UsageService":
                methods |= {m.name for m in svc.method}
    assert {"RecordUsage", "GetUsageSummary", "WatchUsageEvents"} <= methods


def test_reflection_file_by_filename(channel):
    """Clients resolve imports by file name, as in FileDescriptorProto.dependency."""
    name = "wayfind/v1/common.proto"
    resp = reflect(channel, reflection_pb2.ServerReflectionRequest(file_by_filename=name))
    assert not resp.HasField("error_response"), resp.error_response.error_message
    names = [descriptor_pb2.FileDescriptorProto.FromString(raw).name for raw in resp.file_descriptor_response.file_descriptor_proto]
    assert names[:1] == [name], names


def test_reflection_stream_ends_after_client_half_close(channel):
    """Clients that send all requests up front (list(stub.ServerReflectionInfo(iter(reqs)))) wait for
    the server to end the stream once it has answered everything."""
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = [reflection_pb2.ServerReflectionRequest(list_services="")]
    try:
        responses = list(stub.ServerReflectionInfo(iter(requests), timeout=3))
    except grpc.RpcError as err:
        pytest.fail(f"stream did not end with OK after the client half-closed and got its answer: {err.code()}")
    assert len(responses) == 1
    assert responses[0].HasField("list_services_response")


def test_record_usage_idempotent_and_summary(usage, caller):
    req = record_request(caller, "msg_01", input_tokens=1200, output_tokens=350, cache_read_input_tokens=8000)
    first = usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    assert not first.duplicate
    assert first.HasField("cost_usd"), first.unknown_cost_reason
    # Sonnet 4.5: $3/M input, $15/M output, cache reads at 0.1x input.
    assert first.cost_usd == pytest.approx(1200 * 3e-6 + 350 * 15e-6 + 8000 * 0.3e-6, abs=1e-9)

    # A retry (same key, same values) is acknowledged, marked duplicate and counted once.
    retry = usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    assert retry.duplicate
    assert retry.cost_usd == first.cost_usd

    usage.RecordUsage(
        record_request(caller, "msg_02", input_tokens=800, output_tokens=100, cache_creation_input_tokens=2000),
        timeout=RPC_TIMEOUT_S,
    )

    totals = summary_totals(usage, caller)
    assert totals.calls == 2, "the retry must count once"
    assert (totals.input_tokens, totals.output_tokens) == (2000, 450)
    assert (totals.cache_read_input_tokens, totals.cache_creation_input_tokens) == (8000, 2000)
    # cache_read / (input + cache_read + cache_creation)
    assert totals.cache_hit_rate == pytest.approx(8000 / (2000 + 8000 + 2000), abs=1e-9)
    assert totals.total_cost_usd > first.cost_usd
    assert totals.calls_with_unknown_cost == 0

    # Another tenant sees none of it.
    other = common_pb2.CallerContext(tenant_id=caller.tenant_id + "-other")
    assert summary_totals(usage, other).calls == 0


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda r: r.ClearField("provider"), id="missing-provider"),
        pytest.param(lambda r: r.ClearField("usage"), id="missing-usage"),
        pytest.param(lambda r: r.ClearField("idempotency_key"), id="missing-idempotency-key"),
        pytest.param(lambda r: setattr(r.usage, "input_tokens", -1), id="negative-tokens"),
    ],
)
def test_record_usage_invalid_argument(usage, caller, mutate):
    req = record_request(caller, "k", input_tokens=10, output_tokens=5)
    mutate(req)
    with pytest.raises(grpc.RpcError) as err:
        usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
    assert summary_totals(usage, caller).calls == 0, "nothing invalid is recorded"


def test_missing_provider_is_named(usage, caller):
    req = record_request(caller, "k", input_tokens=1)
    req.ClearField("provider")
    with pytest.raises(grpc.RpcError) as err:
        usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "provider" in err.value.details()


def test_invalid_usage_names_its_fields_in_bad_request_details(usage, caller):
    req = record_request(caller, "k", input_tokens=10)
    req.usage.input_tokens = -1
    with pytest.raises(grpc.RpcError) as err:
        usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    status = rpc_status.from_call(err.value)
    assert status is not None, "INVALID_ARGUMENT carries grpc-status-details-bin"
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    bad_request = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad_request)
    assert [v.field for v in bad_request.field_violations] == ["usage.input_tokens"]


def test_watch_unknown_event_type_is_invalid_argument(usage, caller):
    stream = usage.WatchUsageEvents(
        usage_pb2.WatchUsageEventsRequest(caller=caller, filter=events_pb2.EventFilter(types=["no_such_event"])),
        timeout=RPC_TIMEOUT_S,
    )
    with pytest.raises(grpc.RpcError) as err:
        next(stream)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_same_key_different_values_is_already_exists(usage, caller):
    req = usage_pb2.RecordUsageRequest(
        caller=caller,
        provider=common_pb2.PROVIDER_OPENAI,
        model="gpt-5",
        usage=usage_pb2.Usage(input_tokens=10, output_tokens=5),
        idempotency_key="resp_1",
    )
    usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    req.usage.output_tokens = 6  # same key, different call
    with pytest.raises(grpc.RpcError) as err:
        usage.RecordUsage(req, timeout=RPC_TIMEOUT_S)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_watch_usage_events(usage, caller):
    stream = usage.WatchUsageEvents(
        usage_pb2.WatchUsageEventsRequest(
            caller=caller, filter=events_pb2.EventFilter(event_types=[events_pb2.EVENT_TYPE_USAGE_RECORDED])
        ),
        timeout=20,
    )
    try:
        first = next(stream)
        assert first.WhichOneof("message") == "status", first
        assert not first.status.events_lost

        # The status means the subscription is live: what is recorded now must arrive.
        usage.RecordUsage(record_request(caller, "w1", input_tokens=111, output_tokens=7), timeout=RPC_TIMEOUT_S)
        usage.RecordUsage(record_request(caller, "w1", input_tokens=111, output_tokens=7), timeout=RPC_TIMEOUT_S)
        usage.RecordUsage(record_request(caller, "w2", input_tokens=222, output_tokens=7), timeout=RPC_TIMEOUT_S)

        # Skip statuses and heartbeats; the retry of w1 must not produce an event of its own.
        events = (msg.event for msg in stream if msg.WhichOneof("message") == "event")
        last_id = 0
        for want_input in (111, 222):
            ev = next(events)
            assert (ev.event_type, ev.tenant_id, ev.session_id, ev.run_id) == (
                events_pb2.EVENT_TYPE_USAGE_RECORDED,
                caller.tenant_id,
                caller.session_id,
                caller.run_id,
            )
            # The typed payload: integer token counts, the provider as its enum.
            assert ev.WhichOneof("payload") == "usage_recorded"
            recorded = ev.usage_recorded
            assert recorded.model == SONNET
            assert recorded.provider == common_pb2.PROVIDER_ANTHROPIC
            assert (recorded.input_tokens, recorded.output_tokens) == (want_input, 7)
            assert recorded.HasField("cost_usd") and recorded.cost_usd > 0
            assert ev.id > last_id
            last_id = ev.id
    finally:
        stream.cancel()
    with pytest.raises(grpc.RpcError) as err:
        next(stream)
    assert err.value.code() == grpc.StatusCode.CANCELLED


def test_agent_flow(tools, caller):
    """One agent turn: register a deferred catalog, render, search, resolve the tool the model
    called (watching its activation event), render again."""
    refund = "billing.refund_payment"

    # 1. RegisterTools, the example's catalog, for this test's tenant. Registering it again is a no-op.
    register = tools_pb2.RegisterToolsRequest(
        caller=caller, source="example", namespace="billing", tools=billing_tools(), replace_source=True
    )
    first = tools.RegisterTools(register, timeout=RPC_TIMEOUT_S)
    assert first.added + first.updated + first.unchanged == 3 and first.removed == 0, first
    again = tools.RegisterTools(register, timeout=RPC_TIMEOUT_S)
    assert (again.unchanged, again.catalog_fingerprint) == (3, first.catalog_fingerprint), again

    # 2. The first render: the deferred billing tools are counted, not shown.
    def render():
        return tools.RenderToolPrompt(tools_pb2.RenderToolPromptRequest(caller=caller), timeout=RPC_TIMEOUT_S)

    before = render()
    assert before.visible_tools, "the always-loaded tools are visible"
    assert not [name for name in before.visible_tools if name.startswith("billing.")], before.visible_tools
    assert before.deferred_count >= 3
    assert f"{before.deferred_count} deferred tools" in before.text, before.text

    # 3. SearchTools: the billing tool ranks first.
    found = tools.SearchTools(
        tools_pb2.SearchToolsRequest(caller=caller, query="refund a payment", limit=5), timeout=RPC_TIMEOUT_S
    )
    assert found.tools, "no match"
    assert (found.tools[0].name, found.tools[0].loading_mode) == (refund, tools_pb2.LOADING_MODE_DEFERRED), found
    scores = [m.score for m in found.tools]
    assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True), scores

    # 4. Watch the session, then resolve: the first use activates the tool and emits tool_activated.
    events = tools.WatchToolEvents(
        tools_pb2.WatchToolEventsRequest(
            caller=caller,
            filter=events_pb2.EventFilter(
                event_types=[events_pb2.EVENT_TYPE_TOOL_ACTIVATED], session_id=caller.session_id, tool=refund
            ),
        ),
        timeout=RPC_TIMEOUT_S,  # bounds the whole stream
    )
    try:
        assert next(events).WhichOneof("message") == "status"
        resolved = tools.ResolveTool(tools_pb2.ResolveToolRequest(caller=caller, name=refund), timeout=RPC_TIMEOUT_S)
        assert resolved.activated and resolved.scope == tools_pb2.ACTIVATION_SCOPE_RUN, resolved
        assert (resolved.tool.name, resolved.tool.source, len(resolved.tool.examples)) == (refund, "example", 1)
        assert "payment_id" in json_format.MessageToDict(resolved.tool.args_schema)["properties"]

        ev = next(msg.event for msg in events if msg.WhichOneof("message") == "event")
        assert (ev.event_type, ev.tenant_id, ev.session_id, ev.run_id) == (
            events_pb2.EVENT_TYPE_TOOL_ACTIVATED,
            caller.tenant_id,
            caller.session_id,
            caller.run_id,
        )
        activated = ev.tool_activated
        assert (activated.tool, activated.scope, activated.source) == (
            refund,
            events_pb2.ToolActivated.SCOPE_RUN,
            events_pb2.ToolActivated.SOURCE_RESOLVE,
        ), activated
    finally:
        events.cancel()

    # Only the first use activates.
    again = tools.ResolveTool(tools_pb2.ResolveToolRequest(caller=caller, name=refund), timeout=RPC_TIMEOUT_S)
    assert again.tool.name == refund and not again.activated

    # 5. The tool is appended: the previous render is a prefix, and the deferred count is stable.
    after = render()
    assert list(after.visible_tools) == [*before.visible_tools, refund]
    assert after.text.startswith(before.text) and len(after.text) > len(before.text)
    assert after.deferred_count == before.deferred_count, "activated deferred tools still count"

    # The activation belongs to the run: another run of the session does not see the tool.
    other_run = common_pb2.CallerContext()
    other_run.CopyFrom(caller)
    other_run.run_id = "run-2"
    other = tools.RenderToolPrompt(tools_pb2.RenderToolPromptRequest(caller=other_run), timeout=RPC_TIMEOUT_S)
    assert other.visible_tools == before.visible_tools


def test_relevant_skills(skills, caller):
    budget = 400
    resp = skills.GetRelevantSkills(
        skills_pb2.GetRelevantSkillsRequest(
            caller=caller, task="the API returns 429 Too Many Requests", top_k=2, max_tokens=budget
        ),
        timeout=RPC_TIMEOUT_S,
    )
    assert resp.formatted_context, resp
    assert resp.skill_names[:1] == ["http.retry_backoff"], resp.skill_names
    assert 0 < resp.token_estimate <= budget
    for name in resp.skill_names:
        assert name in resp.formatted_context


def test_discovery_tools(tools, caller):
    resp = tools.GetDiscoveryTools(
        tools_pb2.GetDiscoveryToolsRequest(caller=caller, include_skill_tools=True), timeout=RPC_TIMEOUT_S
    )
    assert [t.name for t in resp.tools] == ["tool_search", "tool_get", "skill_search", "skill_get", "skill_list"]
    for tool in resp.tools:
        schema = json_format.MessageToDict(tool.args_schema)
        assert tool.description, tool.name
        assert schema["type"] == "object" and isinstance(schema["properties"], dict), (tool.name, schema)
    assert "query" in json_format.MessageToDict(resp.tools[0].args_schema)["required"]


def test_resolve_unknown_tool_is_not_found(tools, caller):
    with pytest.raises(grpc.RpcError) as err:
        tools.ResolveTool(
            tools_pb2.ResolveToolRequest(caller=caller, name="billing.no_such_tool"), timeout=RPC_TIMEOUT_S
        )
    assert err.value.code() == grpc.StatusCode.NOT_FOUND, err.value.details()


def test_session_activation_without_session_is_failed_precondition(tools, caller):
    no_session = common_pb2.CallerContext(tenant_id=caller.tenant_id, run_id="run-1")
    with pytest.raises(grpc.RpcError) as err:
        tools.ActivateTools(
            tools_pb2.ActivateToolsRequest(
                caller=no_session, names=["github.create_issue"], scope=tools_pb2.ACTIVATION_SCOPE_SESSION
            ),
            timeout=RPC_TIMEOUT_S,
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION, err.value.details()


def test_report_tool_outcome(tools, caller):
    """What became of a tool chosen from a search: a hit of a search the server remembers teaches the
    ranking, a retry with the same key is a duplicate, and a tool that does not exist is NOT_FOUND."""
    refund = "billing.refund_payment"
    tools.RegisterTools(
        tools_pb2.RegisterToolsRequest(
            caller=caller, source="example", namespace="billing", tools=billing_tools(), replace_source=True
        ),
        timeout=RPC_TIMEOUT_S,
    )
    found = tools.SearchTools(
        tools_pb2.SearchToolsRequest(caller=caller, query="refund a payment", limit=5), timeout=RPC_TIMEOUT_S
    )
    assert found.search_id, found
    assert found.tools and found.tools[0].name == refund, found

    report = tools_pb2.ReportToolOutcomeRequest(
        caller=caller,
        search_id=found.search_id,
        tool=refund,
        outcome=common_pb2.OUTCOME_SUCCEEDED,
        note="refunded pay_123",
        idempotency_key="outcome-1",
    )
    first = tools.ReportToolOutcome(report, timeout=RPC_TIMEOUT_S)
    assert (first.learned, first.duplicate) == (True, False), first

    # A retry (same key) is acknowledged and teaches nothing again.
    retry = tools.ReportToolOutcome(report, timeout=RPC_TIMEOUT_S)
    assert (retry.learned, retry.duplicate) == (False, True), retry

    # A tool that does not exist is NOT_FOUND, exactly as one the caller may not see.
    unknown = tools_pb2.ReportToolOutcomeRequest()
    unknown.CopyFrom(report)
    unknown.tool, unknown.idempotency_key = "billing.no_such_tool", "outcome-2"
    with pytest.raises(grpc.RpcError) as err:
        tools.ReportToolOutcome(unknown, timeout=RPC_TIMEOUT_S)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND, err.value.details()


def test_example_script_runs(server):
    """The copy-paste example itself works against the server."""
    check_example(server.addr)


TLS_FIXTURES = REPO_ROOT / "test" / "fixtures" / "tls"


def write_demo_config(data_dir: Path, extra: str) -> Path:
    """data_dir/wayfind.yaml: the demo's catalogs, MCP server and skills (its paths and the MCP
    server's folder made absolute), then `extra`."""
    demo_dir = REPO_ROOT / "demo"
    demo = (demo_dir / "wayfind.yaml").read_text()
    config = data_dir / "wayfind.yaml"
    config.write_text(
        demo.replace("path: ", f"path: {demo_dir}/").replace("cwd: .", f"cwd: {demo_dir}") + "\n" + extra
    )
    return config


@pytest.fixture(scope="session")
def secure_server(tmp_path_factory):
    """The demo over TLS, for API-key holders only; the key made with `wayfind keys create`."""
    data_dir = tmp_path_factory.mktemp("wayfind-secure")
    cert, key = TLS_FIXTURES / "server.pem", TLS_FIXTURES / "server-key.pem"
    config = write_demo_config(
        data_dir, f"server: {{tls: {{cert_file: {cert}, key_file: {key}}}}}\nauth: {{allow_unauthenticated: false}}\n"
    )
    roles = ["--role", "agent", "--role", "observer", "--role", "admin"]
    created = subprocess.run(
        ["node", "bin/wayfind.js", "keys", "create", "--tenant", "acme", *roles, "--data-dir", str(data_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for srv in serve(Server(data_dir, "--config", str(config))):
        srv.api_key = created.stdout.strip()
        # The name the certificate was issued for.
        srv.addr = srv.addr.replace("127.0.0.1", "localhost")
        yield srv


def test_example_script_runs_over_tls_with_an_api_key(secure_server):
    check_example(secure_server.addr, "--ca", str(TLS_FIXTURES / "ca.pem"), "--api-key", secure_server.api_key)


def test_a_call_without_an_api_key_is_unauthenticated(secure_server):
    credentials = grpc.ssl_channel_credentials(root_certificates=(TLS_FIXTURES / "ca.pem").read_bytes())
    with grpc.secure_channel(secure_server.addr, credentials) as channel:
        with pytest.raises(grpc.RpcError) as err:
            stub = tools_pb2_grpc.ToolDiscoveryServiceStub(channel)
            stub.ListTools(tools_pb2.ListToolsRequest(), timeout=RPC_TIMEOUT_S)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "requires credentials" in err.value.details()


def test_dispatch_runtime_loop(server):
    """The dispatch example: the bad call comes back naming the fields to fix, the repaired call runs
    and activates the tool, and the tools array does not change."""
    lines = run_script(
        "wayfind_dispatch.py",
        server.addr,
        want=[
            "health: SERVING",
            "payload: ",
            "tool_search -> result: billing.refund_payment: ",
            'tool_get -> result: [{"description": "Refund a captured payment',
            "tool_call -> error: ",
            'tool_call -> result: {"amount_cents": 500, "payment_id": "pay_123", "refund_id": "re_1"} (activated=True)',
            "tools array and system prompt byte-identical after the activation: True",
        ],
    )
    assert lines[1].endswith("discovery: tool_call, tool_get, tool_search"), lines[1]
    assert "payment_id" in lines[4] and "amount_cents" in lines[4], lines[4]
    # The schema as registered: whole numbers stay whole (a Struct carries them as doubles).
    assert '"minimum": 1,' in lines[3] and '"amount_cents": 500' in lines[3], lines[3]
    assert not re.search(r"\d\.0\b", lines[3]), lines[3]


EVERYTHING = REPO_ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture(scope="session")
def mcp_server(tmp_path_factory):
    """The demo plus an MCP server over stdio (@modelcontextprotocol/server-everything), whose tools
    wayfind lists as everything.* and executes with CallTool; wayfind starts and stops it."""
    assert EVERYTHING.is_file(), f"{EVERYTHING} is missing: run npm ci"
    data_dir = tmp_path_factory.mktemp("wayfind-mcp")
    everything = {"name": "everything", "transport": "stdio", "command": "node", "args": [str(EVERYTHING), "stdio"]}
    config = write_demo_config(data_dir, "")
    # One more server in the demo's list of MCP servers (JSON is YAML).
    config.write_text(config.read_text().replace("mcp_servers:\n", f"mcp_servers:\n  - {json.dumps(everything)}\n", 1))
    yield from serve(Server(data_dir, "--config", str(config)))


def call_tool(tools, caller, name: str, arguments: dict) -> tools_pb2.CallToolResponse:
    request = tools_pb2.CallToolRequest(caller=caller, name=name, arguments=json_struct(arguments))
    return tools.CallTool(request, timeout=RPC_TIMEOUT_S)


def test_call_tool_of_an_mcp_server(mcp_server, caller):
    """CallTool forwards the call to the MCP server and returns its result unchanged; a catalog tool is
    FAILED_PRECONDITION (the runtime runs it), arguments off the schema INVALID_ARGUMENT."""
    with grpc.insecure_channel(mcp_server.addr) as channel:
        tools = tools_pb2_grpc.ToolDiscoveryServiceStub(channel)
        # The server waits for the MCP server's tools before it listens, but a slow machine may
        # outwait that: the tool is NOT_FOUND until the first sync.
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                called = call_tool(tools, caller, "everything.echo", {"message": "hi"})
                break
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert [json_format.MessageToDict(block) for block in called.content] == [{"type": "text", "text": "Echo: hi"}]
        assert not called.is_error
        assert (called.tool, called.source) == ("everything.echo", "mcp:everything")

        with pytest.raises(grpc.RpcError) as err:
            call_tool(tools, caller, "everything.echo", {})
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "message" in err.value.details()

        with pytest.raises(grpc.RpcError) as err:
            call_tool(tools, caller, "github.create_issue", {"owner": "o", "repo": "r", "title": "t"})
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION, err.value.details()

        # The dispatch runtime: the model's tool_call of an MCP tool goes to CallTool and the content
        # back to the model; a catalog tool is the runtime's own (it has no implementation of this one).
        runtime = DispatchRuntime(channel, caller)
        echo = {"name": "everything.echo", "arguments": {"message": "hi"}}
        assert runtime.handle("tool_call", echo) == ToolResult("Echo: hi")
        repair = runtime.handle("tool_call", {"name": "everything.echo", "arguments": {}})
        assert repair.is_error and "message" in repair.content, repair
        issue = {"name": "github.create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}}
        assert runtime.handle("tool_call", issue) == ToolResult(
            "github.create_issue cannot run here; use another tool", is_error=True
        )


def check_example(addr: str, *flags: str) -> None:
    lines = run_script(
        "wayfind_example.py",
        addr,
        *flags,
        want=[
            "health: SERVING",
            "recorded: cost $0.011250",
            "summary: 1 calls",
            "registered: ",
            "prompt: ",
            "search: billing.refund_payment ",
            "resolved: billing.refund_payment (activated=True)",
            "event: tool_activated billing.refund_payment (scope run, source resolve)",
            "outcome: billing.refund_payment succeeded (learned=True, duplicate=False)",
            "prompt: ",
            "skills: http.retry_backoff",
        ],
    )
    assert lines[9].endswith(", billing.refund_payment (previous prompt is a prefix: True)"), lines[9]
    # What README.md shows is what the example prints (a search's score follows the ranking: not compared).
    assert [mask_scores(line) for line in lines] == [mask_scores(line) for line in readme_sample()]


def mask_scores(line: str) -> str:
    return re.sub(r"\(score \d\.\d\d\)", "(score …)", line)


def readme_sample() -> list[str]:
    """The example's output as README.md "Run" shows it: the plain block after the commands."""
    run = (Path(__file__).with_name("README.md")).read_text().split("## Run", 1)[1]
    return run.split("```\n", 3)[2].split("```", 1)[0].strip().splitlines()


def run_script(script: str, addr: str, *flags: str, want: list[str]) -> list[str]:
    """Runs an example script against addr; its output lines must start with `want`, one each."""
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name(script)), "--addr", addr, *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == len(want), out.stdout
    for line, prefix in zip(lines, want):
        assert line.startswith(prefix), out.stdout
    return lines


def test_consumer_resumes_without_loss_or_repeat(channel, tools, usage, skills, caller, tmp_path):
    """The consumer stopped mid-burst and restarted from its state file counts every event once."""
    from wayfind_consumer import Consumer, load_state

    burst = 40
    relevant = skills_pb2.GetRelevantSkillsRequest(caller=caller, task="the API returns 429 Too Many Requests", top_k=2)
    per_call = len(skills.GetRelevantSkills(relevant, timeout=RPC_TIMEOUT_S).skill_names)
    assert per_call > 0
    tools.RegisterTools(
        tools_pb2.RegisterToolsRequest(
            caller=caller, source="consumer", namespace="billing", tools=billing_tools(), replace_source=True
        ),
        timeout=RPC_TIMEOUT_S,
    )
    state_path = tmp_path / "figures.json"

    def event(i: int) -> None:
        run = common_pb2.CallerContext()
        run.CopyFrom(caller)
        run.run_id = f"consumer-run-{i}"
        tools.ActivateTools(
            tools_pb2.ActivateToolsRequest(caller=run, names=["billing.refund_payment"]), timeout=RPC_TIMEOUT_S
        )
        usage.RecordUsage(
            record_request(run, f"consumer-{i}", input_tokens=100, output_tokens=10), timeout=RPC_TIMEOUT_S
        )
        skills.GetRelevantSkills(relevant, timeout=RPC_TIMEOUT_S)

    consumer = Consumer(channel, caller, state_path).start()
    for i in range(burst):
        if i == burst // 3:
            consumer.stop()  # mid-burst: events keep coming while the consumer is down
        event(i)
    consumer = Consumer(channel, caller, state_path).start()
    try:
        deadline = time.monotonic() + RPC_TIMEOUT_S
        while time.monotonic() < deadline:
            figures = load_state(state_path)["figures"]
            if figures["tokens_by_model"].get(SONNET, 0) >= burst * 110:
                break
            time.sleep(0.02)
        time.sleep(0.2)  # anything counted twice would arrive now
        figures = load_state(state_path)["figures"]
    finally:
        consumer.stop()
    assert figures["activations_by_tool"].get("billing.refund_payment") == burst
    assert figures["tokens_by_model"].get(SONNET) == burst * 110, "events lost or counted twice"
    assert figures["cost_usd_by_model"][SONNET] > 0
    # The first GetRelevantSkills came before the consumer's first start: it replays it too.
    assert figures["skills_retrieved"] == (burst + 1) * per_call
    assert sum(figures["skills_retrieved_by_task_type"].values()) == (burst + 1) * per_call


async def find_and_call_echo(client: Client) -> None:
    """What an MCP client does with wayfind: the fixed tool list, tool_search, then tool_call."""
    listed = [tool.name for tool in (await client.list_tools()).tools]
    assert listed[:3] == ["tool_search", "tool_get", "tool_call"], listed
    found = await client.call_tool("tool_search", {"query": "echo a message back"})
    assert json.loads(found.content[0].text)["tools"][0]["name"] == "everything.echo"
    called = await client.call_tool("tool_call", {"name": "everything.echo", "arguments": {"message": "from python"}})
    assert not called.is_error
    assert called.content[0].text == "Echo: from python"


# The two protocol eras /mcp serves: a 2025-11-25 session (the initialize handshake), and
# 2026-07-28 requests that each stand on their own (no session).
ERAS = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", ERAS)
def test_mcp_python_client_over_streamable_http(mcp_server, mode):
    """The official MCP Python SDK reaches wayfind's /mcp and calls an upstream tool through it, in either era."""

    async def run() -> None:
        url = f"http://{mcp_server.addr}/mcp"
        async with httpx2.AsyncClient(headers={"wayfind-tenant": "acme"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                assert client.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
                await find_and_call_echo(client)

    anyio.run(run)


def test_mcp_python_client_negotiates_the_2026_era(mcp_server):
    """Left to negotiate (the SDK's default), the client finds /mcp speaks 2026-07-28 and uses it."""

    async def run() -> None:
        url = f"http://{mcp_server.addr}/mcp"
        async with httpx2.AsyncClient(headers={"wayfind-tenant": "acme"}) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                assert client.protocol_version == "2026-07-28"

    anyio.run(run)


def test_mcp_python_client_over_the_stdio_bridge(mcp_server):
    """The same through `wayfind mcp`, launched as a desktop client launches an MCP server."""
    bridge = StdioServerParameters(
        command="node",
        args=[str(REPO_ROOT / "bin" / "wayfind.js"), "mcp", "--url", f"http://{mcp_server.addr}", "--tenant", "acme"],
    )

    async def run() -> None:
        # The bridge speaks 2025-11-25 (the initialize handshake).
        async with Client(bridge, mode="legacy") as client:
            await find_and_call_echo(client)

    anyio.run(run)


@pytest.mark.parametrize("mode", ERAS)
def test_mcp_python_client_answers_server_everythings_requests_through_wayfind(mcp_server, mode):
    """Issue 45: server-everything's sampling, elicitation and roots tools reach the Python client's
    own callbacks through /mcp — pushed to a 2025 session, over rounds (input_required) to a 2026
    client — and its prompts and resources are offered under its namespace."""

    async def sampling(context, params) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", model="test-model", content=types.TextContent(type="text", text="sampled in python")
        )

    async def elicitation(context, params) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def run() -> None:
        url = f"http://{mcp_server.addr}/mcp"
        async with httpx2.AsyncClient(headers={"wayfind-tenant": "acme"}) as http:
            async with Client(
                streamable_http_client(url, http_client=http),
                mode=mode,
                sampling_callback=sampling,
                elicitation_callback=elicitation,
                list_roots_callback=roots,
            ) as client:

                async def call(name: str, arguments: dict | None = None) -> str:
                    called = await client.call_tool("tool_call", {"name": f"everything.{name}", "arguments": arguments or {}})
                    assert not called.is_error, called
                    return "".join(block.text for block in called.content if block.type == "text")

                assert "sampled in python" in await call("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
                assert "Ada" in await call("trigger-elicitation-request")
                assert "URI: file:///work/project" in await call("get-roots-list")
                # The demo's skills come first, then the server's, page after page.
                prompts, cursor = [], None
                while True:
                    page = await client.list_prompts(cursor=cursor)
                    prompts += [prompt.name for prompt in page.prompts]
                    if not (cursor := page.next_cursor):
                        break
                assert "everything.simple-prompt" in prompts, prompts
                assert (await client.get_prompt("everything.simple-prompt")).messages
                resources, cursor = [], None
                while True:
                    page = await client.list_resources(cursor=cursor)
                    resources += [r for r in page.resources if r.name.startswith("everything.")]
                    if not (cursor := page.next_cursor):
                        break
                assert resources, "server-everything's resources are listed"
                read = await client.read_resource(resources[0].uri)
                assert str(read.contents[0].uri) == str(resources[0].uri)

    anyio.run(run)
