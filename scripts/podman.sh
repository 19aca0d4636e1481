#!/usr/bin/env bash
# podman with the settings this kind of machine needs, for scripts/image.sh and the image's tests:
#   bash scripts/podman.sh <podman arguments…>
# - runc where it is installed: crun refuses the hybrid cgroup layout of some kernels (this one);
# - the cgroupfs cgroup manager where systemd is not running (containers, CI VMs);
# - run: explicit open-file and process limits (65536 and 8192, or this shell's hard limits where
#   lower: a container may not raise them), which podman otherwise takes from its own defaults that
#   the runtime may refuse; without systemd, no health-check timer (podman healthcheck run still
#   runs the image's check on demand).
# WAYFIND_PODMAN names another podman (or a compatible command).
set -euo pipefail

podman="${WAYFIND_PODMAN:-podman}"
global=()
command -v runc >/dev/null 2>&1 && global+=(--runtime runc)
[ -d /run/systemd/system ] || global+=(--cgroup-manager cgroupfs)

at_most() { if [ "$2" = unlimited ] || [ "$1" -le "$2" ]; then echo "$1"; else echo "$2"; fi; }

if [ "${1:-}" = "run" ]; then
  shift
  files=$(at_most 65536 "$(ulimit -Hn)")
  processes=$(at_most 8192 "$(ulimit -Hu)")
  run=(--ulimit "nofile=$files:$files" --ulimit "nproc=$processes:$processes")
  [ -d /run/systemd/system ] || run+=(--health-interval disable)
  exec "$podman" "${global[@]}" run "${run[@]}" "$@"
fi
exec "$podman" "${global[@]}" "$@"
