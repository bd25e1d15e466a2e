# Shared helpers for the scripts in this folder (sourced, not run).
# shellcheck shell=bash

SANDRUN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKER_SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/sandrun-dockerd.log}

log() { printf 'sandrun-setup: %s\n' "$*" >&2; }
die() { printf 'sandrun-setup: error: %s\n' "$*" >&2; exit 1; }

engine_answers() {
  curl -fsS --max-time 2 --unix-socket "$DOCKER_SOCK" http://localhost/_ping >/dev/null 2>&1
}
