#!/usr/bin/env bash
# Baseline (c): one `/bin/sh -lc true` exec as the same three Engine API calls made by three
# curl processes (create, start, inspect). Usage: exec_curl.sh CONTAINER_ID [API_VERSION]
set -euo pipefail
ctr=$1 api=${2:-1.41} sock=${DOCKER_SOCK:-/var/run/docker.sock}
id=$(curl -fsS --unix-socket "$sock" -H 'Content-Type: application/json' \
  -d '{"AttachStdout":true,"AttachStderr":true,"Cmd":["/bin/sh","-lc","true"]}' \
  "http://docker/v$api/containers/$ctr/exec" | cut -d'"' -f4)
curl -fsS --unix-socket "$sock" -H 'Content-Type: application/json' \
  -d '{"Detach":false,"Tty":false}' "http://docker/v$api/exec/$id/start" >/dev/null
curl -fsS --unix-socket "$sock" "http://docker/v$api/exec/$id/json" >/dev/null
