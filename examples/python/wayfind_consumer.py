"""An observability consumer of wayfind's event streams: counts what an operator wants (activations per
tool, zero-result searches, skills retrieved per task type, cost and tokens per model) into a state
file kept with each stream's cursor. The file is replaced atomically after every event, so a consumer
stopped at any point resumes after the last event it counted: none lost, none counted twice.

    python wayfind_consumer.py --addr 127.0.0.1:50051 --tenant acme --state figures.json
"""

import argparse
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

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

from wayfind_example import open_channel


def empty_state() -> dict:
    return {
        "cursors": {},
        "figures": {
            "activations_by_tool": {},
            "tool_searches": 0,
            "zero_result_searches": 0,
            "skills_retrieved": 0,
            "skills_retrieved_by_task_type": {},
            "cost_usd_by_model": {},
            "tokens_by_model": {},
        },
    }


def load_state(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else empty_state()


def save_state(path: Path, state: dict) -> None:
    """Replaces the file atomically: a crash leaves the old state or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".consumer-state-")
    with os.fdopen(fd, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def count(figures: dict, event: events_pb2.Event) -> None:
    """Adds one event to the figures, by its typed payload."""
    kind = event.WhichOneof("payload")
    if kind == "tool_activated":
        by_tool = figures["activations_by_tool"]
        by_tool[event.tool_activated.tool] = by_tool.get(event.tool_activated.tool, 0) + 1
    elif kind == "tool_search_query":
        figures["tool_searches"] += 1
        if event.tool_search_query.result_count == 0:
            figures["zero_result_searches"] += 1
    elif kind == "skills_retrieved":
        figures["skills_retrieved"] += event.skills_retrieved.skill_count
        by_type = figures["skills_retrieved_by_task_type"]
        for task_type in event.skills_retrieved.task_types:
            by_type[task_type] = by_type.get(task_type, 0) + 1
    elif kind == "usage_recorded":
        u = event.usage_recorded
        figures["cost_usd_by_model"][u.model] = figures["cost_usd_by_model"].get(u.model, 0.0) + u.cost_usd
        tokens = u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        figures["tokens_by_model"][u.model] = figures["tokens_by_model"].get(u.model, 0) + tokens


class Consumer:
    """Watches the tool, skill and usage streams of a tenant until `stop()`."""

    def __init__(self, channel: grpc.Channel, caller: common_pb2.CallerContext, state_path: Path) -> None:
        self._path = state_path
        self._state = load_state(state_path)
        self._lock = threading.Lock()  # one event at a time changes the figures and the file
        self._calls: list[grpc.Future] = []
        self.live = threading.Barrier(4)  # three streams open, plus whoever waits for them
        tools = tools_pb2_grpc.ToolDiscoveryServiceStub(channel)
        skills = skills_pb2_grpc.SkillServiceStub(channel)
        usage = usage_pb2_grpc.UsageServiceStub(channel)
        self._streams: dict[str, Callable[[events_pb2.EventFilter], Iterator]] = {
            "tools": lambda f: tools.WatchToolEvents(tools_pb2.WatchToolEventsRequest(caller=caller, filter=f)),
            "skills": lambda f: skills.WatchSkillEvents(skills_pb2.WatchSkillEventsRequest(caller=caller, filter=f)),
            "usage": lambda f: usage.WatchUsageEvents(usage_pb2.WatchUsageEventsRequest(caller=caller, filter=f)),
        }
        self._threads = [threading.Thread(target=self._watch, args=(name,), daemon=True) for name in self._streams]

    def start(self) -> "Consumer":
        for thread in self._threads:
            thread.start()
        self.live.wait(timeout=10)
        return self

    def stop(self) -> None:
        for call in list(self._calls):
            call.cancel()
        for thread in self._threads:
            thread.join(timeout=10)

    def _watch(self, name: str) -> None:
        with self._lock:
            after = self._state["cursors"].get(name, 0)
        # A first start replays what the server retains; a restart resumes after its cursor.
        call = self._streams[name](events_pb2.EventFilter(after_id=after, from_oldest=after == 0))
        self._calls.append(call)
        try:
            next(call)  # the status: the stream is live
            self.live.wait(timeout=10)
            for message in call:
                if message.WhichOneof("message") != "event":
                    continue  # a status or heartbeat
                with self._lock:
                    count(self._state["figures"], message.event)
                    self._state["cursors"][name] = message.event.id
                    save_state(self._path, self._state)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="wayfind server address (host:port)")
    parser.add_argument("--ca", help="PEM file of the CA that signed the server's certificate (enables TLS)")
    parser.add_argument(
        "--api-key", default=os.environ.get("WAYFIND_API_KEY"), help="API key (default $WAYFIND_API_KEY)"
    )
    parser.add_argument("--tenant", default="acme", help="the tenant whose events to count")
    parser.add_argument("--state", default="wayfind-figures.json", help="the state file (figures and cursors)")
    args = parser.parse_args()
    with open_channel(args.addr, args.ca, args.api_key) as channel:
        consumer = Consumer(channel, common_pb2.CallerContext(tenant_id=args.tenant), Path(args.state)).start()
        print(f"watching; figures in {args.state} (Ctrl-C to stop)")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            consumer.stop()


if __name__ == "__main__":
    main()
