#!/usr/bin/env bash
# The README's quick start on a fresh clone with nothing beside it: install from the lock file, serve
# the demo, answer one call, stop cleanly. Clones the committed state of this checkout (HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

git clone -q --no-local . "$work/wayfind"
cd "$work/wayfind"
[ ! -e ../shared ] || { echo "fresh clone: something is beside the clone" >&2; exit 1; }

echo "== npm ci (from package-lock.json), as the README says: only Node 22 first on PATH"
# Nothing of .ci/run's environment: npm's own nodedir setting may name another Node's headers (this
# machine's does), and the install must mend what that compiles (scripts/native.js).
# Packages come from the npm cache when the outer install left them there (CI did, just before).
if ! env -u npm_config_nodedir -u ONNXRUNTIME_NODE_INSTALL \
  npm ci --prefer-offline --no-audit --no-fund >"$work/npm.log" 2>&1; then
  cat "$work/npm.log" >&2
  exit 1
fi
# Minutes of an install must not pass in silence: the native module's compile and each part of the
# build say what they do as they go (.npmrc, scripts/build.js).
for expected in "better-sqlite3@.* install" "wayfind build: bundling the web console" \
  "wayfind build: compiling the server" "wayfind build: server compiled in"; do
  grep -q -- "$expected" "$work/npm.log" || {
    cat "$work/npm.log" >&2
    echo "fresh clone: npm ci did not say \"$expected\" as it went" >&2
    exit 1
  }
done

# Another Node on the machine (its system one, say) running this install's server says what to do.
other_node=$(type -ap node | while read -r candidate; do
  [ "$("$candidate" -p process.versions.modules)" != "$(node -p process.versions.modules)" ] && echo "$candidate" && break
done || true)
if [ -n "$other_node" ]; then
  echo "== wayfind under another Node ($("$other_node" --version)): a clear message, not Node's own"
  if "$other_node" bin/wayfind.js --version >"$work/other.log" 2>&1 || ! grep -q -e "needs Node.js 22 or newer" \
    -e "better-sqlite3 was compiled for another Node.js" "$work/other.log"; then
    cat "$work/other.log" >&2
    echo "fresh clone: another Node was not told what to do" >&2
    exit 1
  fi
  head -1 "$work/other.log"
fi

echo "== wayfind serve (the demo, as npm start runs it: its Node flags, on a free port)"
flags=$(node -p 'const w = require("./package.json").scripts.start.split(/\s+/); w.slice(w.indexOf("node") + 1, w.indexOf("bin/wayfind.js")).join(" ")')
# shellcheck disable=SC2086 # the flags are separate words
node $flags bin/wayfind.js serve --port 0 >"$work/serve.log" 2>&1 &
server=$!
port=""
for _ in $(seq 1 120); do
  port=$(grep -o '"port":[0-9]*' "$work/serve.log" | head -1 | cut -d: -f2 || true)
  [ -n "$port" ] && break
  sleep 0.5
done
[ -n "$port" ] || { echo "fresh clone: the server never said it was listening" >&2; cat "$work/serve.log" >&2; exit 1; }

echo "== one call (SearchTools, Connect JSON over HTTP/1.1)"
node -e '
  const port = process.argv[1];
  fetch(`http://127.0.0.1:${port}/wayfind.v1.ToolDiscoveryService/SearchTools`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ caller: { tenantId: "acme" }, query: "create a pull request" }),
  })
    .then((response) => response.json())
    .then((answer) => {
      const best = answer.tools?.[0]?.name;
      if (best !== "github.create_pull_request") throw new Error(`unexpected answer: ${JSON.stringify(answer)}`);
      console.log(`best hit: ${best}`);
    })
    .catch((error) => { console.error(`fresh clone: ${error.message}`); process.exit(1); });
' "$port"

echo "== hybrid search with the shipped model (a request sharing no word with its tool)"
node -e '
  const base = `http://127.0.0.1:${process.argv[1]}`;
  (async () => {
    for (let i = 0; i < 150; i++) {
      const ready = await (await fetch(`${base}/readyz`)).json();
      if (ready.checks.semantic === "ready") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // On a busy machine the request may miss its wait for the model (it is then ranked by words and
    // says so); its vector is kept, so asking again finds it.
    let answer;
    for (let i = 0; i < 10; i++) {
      const response = await fetch(`${base}/wayfind.v1.ToolDiscoveryService/SearchTools`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ caller: { tenantId: "acme" }, query: "should I take an umbrella tomorrow?" }),
      });
      answer = await response.json();
      if (answer.semanticStatus === "SEMANTIC_STATUS_READY") break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const best = answer.tools?.[0];
    if (answer.semanticStatus !== "SEMANTIC_STATUS_READY" || best?.name !== "get_weather" || !(best.semanticScore > 0))
      throw new Error(`unexpected answer: ${JSON.stringify(answer)}`);
    console.log(`best hit: ${best.name} (semantic score ${best.semanticScore.toFixed(2)})`);
  })().catch((error) => { console.error(`fresh clone: ${error.message}`); process.exit(1); });
' "$port"

echo "== the README's short tour, call by call (each curl of its block, against this server)"
node -e '
  const readme = require("node:fs").readFileSync("README.md", "utf8");
  const tour = readme.slice(readme.indexOf("## A short tour"));
  const start = tour.indexOf("```sh") + 5;
  const lines = tour.slice(start, tour.indexOf("```", start)).replace(/\\\n\s*/g, "").split("\n");
  const base = `http://127.0.0.1:${process.argv[1]}/wayfind.v1`;
  const calls = lines
    .filter((line) => line.startsWith("curl "))
    .map((line) => {
      const call = /-d \x27(.*)\x27 \$W\.(\S+)$/.exec(line);
      if (!call) throw new Error(`a tour line this test cannot read: ${line}`);
      return { body: call[1], url: `${base}.${call[2]}` };
    });
  (async () => {
    if (calls.length < 8) throw new Error(`the tour has ${calls.length} curl calls`);
    for (const { body, url } of calls) {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
      const answer = await response.text();
      if (!response.ok) throw new Error(`${url} answered ${response.status}: ${answer}`);
      console.log(`ok ${url.slice(url.lastIndexOf("/") + 1)}`);
    }
  })().catch((error) => { console.error(`fresh clone: ${error.message}`); process.exit(1); });
' "$port"

echo "== stop (SIGTERM: drains, then exits 0)"
kill -TERM "$server"
wait "$server"
server=""
echo "fresh clone: ok"
