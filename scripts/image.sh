#!/usr/bin/env bash
# `npm run image`: builds the container image (Dockerfile) with podman and tags it
# localhost/wayfind:latest and localhost/wayfind:<package version> (WAYFIND_IMAGE names one other tag).
#
# Base image (the Dockerfile's NODE_IMAGE), first that applies:
#   1. WAYFIND_NODE_IMAGE, when set (e.g. docker.io/library/node:22-bookworm-slim);
#   2. localhost/wayfind-node:<version>, built before by this script;
#   3. the public node:22-bookworm-slim, when it can be pulled;
#   4. otherwise built here from what a machine without an image registry reaches: Debian bookworm
#      (debootstrap, minimal variant) with the official Node release from the npm registry
#      (scripts/node-from-npm.sh) and npm, imported as localhost/wayfind-node:<version>.
# Needs podman (apt-get install podman runc; debootstrap for 4) and root for debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION="${WAYFIND_NODE_VERSION:-22.23.3}"
NPM_VERSION=11.19.1
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR="${WAYFIND_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PUBLIC_BASE=docker.io/library/node:22-bookworm-slim
LOCAL_BASE="localhost/wayfind-node:$NODE_VERSION-$DEBIAN_SUITE"
tag="${WAYFIND_IMAGE:-localhost/wayfind:latest}"
# The Helm chart runs its appVersion's tag by default: the package's version names the same build.
version_tag=""
[ -z "${WAYFIND_IMAGE:-}" ] && version_tag="localhost/wayfind:$(node -p 'require("./package.json").version')"
podman=(bash scripts/podman.sh)

command -v "${WAYFIND_PODMAN:-podman}" >/dev/null || {
  echo "image: podman is not installed (apt-get install podman runc)" >&2
  exit 1
}
started=$SECONDS

# A Node image from Debian packages and the npm registry: what the public node:22-bookworm-slim
# holds that the build and the server use (Debian's minimal system, node, its headers, npm).
build_local_base() {
  command -v debootstrap >/dev/null || { echo "image: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
  local work rootfs node_dir
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  rootfs="$work/rootfs"
  echo "== base: Debian $DEBIAN_SUITE (debootstrap --variant=minbase from $DEBIAN_MIRROR)"
  debootstrap --variant=minbase --include=ca-certificates "$DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $DEBIAN_MIRROR $DEBIAN_SUITE main
deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main
deb ${DEBIAN_MIRROR%/debian}/debian-security $DEBIAN_SUITE-security main
EOF
  # As slim as the public image: no package lists, caches, manuals or translations.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/*
  echo "== base: Node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
  node_dir=$(bash scripts/node-from-npm.sh "$NODE_VERSION")
  install -D -m 0755 "$node_dir/bin/node" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/include" "$rootfs/usr/local/lib/node_modules/npm"
  cp -R "$node_dir/include/node" "$rootfs/usr/local/include/"
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work"/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  tar -C "$rootfs" --numeric-owner -cf - . | "${podman[@]}" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$NODE_VERSION" \
    --change 'CMD ["node"]' \
    - "$LOCAL_BASE" >/dev/null
  echo "== base: $LOCAL_BASE built in $((SECONDS - started)) s"
}

base="${WAYFIND_NODE_IMAGE:-}"
if [ -z "$base" ]; then
  if "${podman[@]}" image exists "$LOCAL_BASE"; then
    base="$LOCAL_BASE"
  elif timeout 60 "${podman[@]}" pull -q "$PUBLIC_BASE" >/dev/null 2>&1; then
    base="$PUBLIC_BASE"
  else
    echo "== base: $PUBLIC_BASE cannot be pulled here; building one from Debian packages and the npm registry"
    build_local_base
    base="$LOCAL_BASE"
  fi
fi

echo "== image: $tag from $base"
build_started=$SECONDS
# Docker's format keeps the HEALTHCHECK (OCI image configs have no field for it).
secret=()
# Where TLS to the npm registry passes a proxy with its own CA, the build's npm must trust it too.
[ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ] && secret=(--secret "id=ca_certs,src=$NODE_EXTRA_CA_CERTS")
"${podman[@]}" build --format docker --network host "${secret[@]}" --build-arg "NODE_IMAGE=$base" -t "$tag" \
  ${version_tag:+-t "$version_tag"} .
# The build stage's image (node_modules with the compilers' leftovers, well over a GB) is left
# untagged by every build; the layers the next build reuses stay in the cache.
"${podman[@]}" image prune -f --filter label=io.wayfind.stage=build >/dev/null ||
  echo "image: the build stage's untagged image could not be removed (podman image prune)" >&2
size=$("${podman[@]}" image inspect "$tag" --format '{{.Size}}')
echo "image: $tag built in $((SECONDS - build_started)) s ($((SECONDS - started)) s in all), $((size / 1000000)) MB"
