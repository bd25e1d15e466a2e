#!/usr/bin/env bash
# Front ends adapt a transport to the runtime (runner/api/runtime.h) and know nothing of policy,
# sessions or the sandbox: fails when one of the listed front-end files includes a header from
# runner/policy, runner/sessions or sandbox/ other than sandbox/base (the ground floor every
# layer stands on: Result, JSON helpers, strings; DESIGN.md), which a protocol front end (MCP)
# needs to read and write its messages.
# Usage: front_end_includes.sh SOURCE_DIR FILE...
set -euo pipefail
root=$1
shift
status=0
for file in "$@"; do
  path="$root/$file"
  [ -f "$path" ] || { echo "missing: $file" >&2; status=1; continue; }
  if hits=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(runner/policy|runner/sessions|sandbox)/' "$path" |
             grep -vE '#[[:space:]]*include[[:space:]]*"sandbox/base/'); then
    echo "$file includes what a front end must not (use runner/api/runtime.h):" >&2
    echo "$hits" >&2
    status=1
  fi
done
exit $status
