"""penguiflow's tool search (planner.tool_search_cache.ToolSearchCache, SQLite FTS5), timed in process.

Reads a catalog JSONL ({name, description, ...} per line) and a JSON list of requests; syncs the
catalog into a fresh cache, searches every request once unmeasured, then again measured; prints
{"tools", "requests", "p50_ms", "p99_ms", "mean_ms"} as JSON. Used by bench/versus-penguiflow.ts.
Usage: python penguiflow_search.py CATALOG.jsonl REQUESTS.json
"""

import json
import sys
import tempfile
import time

from pydantic import BaseModel

from penguiflow.catalog import NodeSpec, ToolLoadingMode
from penguiflow.node import Node
from penguiflow.planner.tool_search_cache import ToolSearchCache


class Args(BaseModel):
    pass


async def handler(message, ctx):  # never called: search reads the specs only
    return message


def main() -> None:
    catalog, requests = sys.argv[1], sys.argv[2]
    specs = []
    seen = set()
    for line in open(catalog, encoding="utf-8"):
        if not line.strip():
            continue
        tool = json.loads(line)
        name = tool["name"]
        if name in seen:
            continue
        seen.add(name)
        specs.append(
            NodeSpec(
                node=Node(handler, name=name),
                name=name,
                desc=tool.get("description") or "",
                args_model=Args,
                out_model=Args,
                loading_mode=ToolLoadingMode.DEFERRED,
            )
        )
    queries = json.load(open(requests, encoding="utf-8"))
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = ToolSearchCache(cache_dir=cache_dir, max_search_results=8)
        cache.sync_tools(specs)
        search = lambda q: cache.search(q, search_type="fts", limit=8, include_always_loaded=False)
        for q in queries:
            search(q)
        times = []
        for q in queries:
            start = time.perf_counter_ns()
            search(q)
            times.append((time.perf_counter_ns() - start) / 1e6)
    times.sort()
    at = lambda p: times[min(len(times) - 1, int(p / 100 * len(times)))]
    print(json.dumps({"tools": len(specs), "requests": len(times), "p50_ms": at(50), "p99_ms": at(99), "mean_ms": sum(times) / len(times)}))


if __name__ == "__main__":
    main()
