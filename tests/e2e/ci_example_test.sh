#!/usr/bin/env bash
# scripts/examples/ci/run-agent-job.sh end to end against the real dockerd (issue 19): a checkout
# owned by a CI user (uid 1000), the demo commands, the artifacts, exit codes, and no container
# left behind, also when a command fails. Usage: ci_example_test.sh SANDRUN_BINARY SOURCE_DIR
# Exit 77 (skipped) without an engine unless CI=true.
set -uo pipefail
sandrun=$1
job_script=$2/scripts/examples/ci/run-agent-job.sh
sock=${DOCKER_SOCK:-/var/run/docker.sock}

if ! curl -fsS --max-time 2 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; then
  [ "${CI:-}" = true ] && { echo "FAIL: Docker engine required in CI ($sock)"; exit 1; }
  echo "SKIPPED: no Docker engine on $sock; CI=true makes this a failure"
  exit 77
fi

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Named like the e2e homes, so scripts/test's leak check sees what the job leaves behind.
base=$(mktemp -d /tmp/sandrun-e2e-XXXXXX)
containers_of() {  # the ids of containers whose state dir is $1
  local filter
  filter=$(python3 -c 'import json,sys,urllib.parse; print(urllib.parse.quote(json.dumps({"label":["sandrun.stateDir="+sys.argv[1]]})))' "$1")
  curl -fsS --unix-socket "$sock" "http://localhost/containers/json?all=1&filters=$filter" \
    | python3 -c 'import json,sys; print(" ".join(c["Id"] for c in json.load(sys.stdin)))'
}
cleanup() {
  for home in "$base"/home-*; do
    for id in $(containers_of "$home"); do
      curl -fsS -X DELETE --unix-socket "$sock" "http://localhost/containers/$id?force=1" >/dev/null
    done
  done
  rm -rf "$base"
}
trap cleanup EXIT
chmod 755 "$base"

# A checkout as CI leaves it: owned by the CI user, not by root.
make_checkout() {
  mkdir -p "$1"
  printf 'hello\n' >"$1/README"
  printf 'int main() {}\n' >"$1/main.c"
  chown -R 1000:1000 "$1"
}

# 1. The demo job passes: its output, the artifact, files owned by the checkout's owner.
make_checkout "$base/checkout"
out=$(SANDRUN="$sandrun" JOB_ID=job-1 SANDRUN_IMAGE=sandrun-sandbox:minimal \
  JOB_STATE_DIR="$base/home-1" bash "$job_script" "$base/checkout" "$base/artifacts" 2>&1)
code=$?
echo "$out"
[ "$code" -eq 0 ] || fail "the demo job exited $code"
grep -qx 'agent: uid 1000 in /workspace' <<<"$out" || fail "the commands did not run as the checkout's owner in /workspace"
grep -qx 'listed 2 files' <<<"$out" || fail "the demo did not list the checkout"
grep -qx 'run-agent-job: job job-1 done (exit 0); artifacts in '"$base/artifacts" <<<"$out" \
  || fail "no final line"
[ "$(cat "$base/artifacts/agent-out/files.txt" 2>/dev/null)" = "$(printf 'README\nmain.c')" ] \
  || fail "the artifact agent-out/files.txt is missing or wrong"
grep -q '^\$ ls -1$' "$base/artifacts/agent.log" || fail "agent.log lacks the commands"
grep -q '"decision"' "$base/artifacts/audit.jsonl" 2>/dev/null || fail "audit.jsonl was not collected"
[ "$(stat -c %u "$base/checkout/agent-out/files.txt")" = 1000 ] || fail "agent-out is not owned by uid 1000"
[ -z "$(containers_of "$base/home-1")" ] || fail "the job left its container behind"

# 2. A failing command: the job goes on, exits with that command's code, still prunes.
make_checkout "$base/checkout2"
printf '%s\n' '# the agent' 'echo one > one.txt' 'exit 3' '' 'echo after' 'no-such-tool' >"$base/commands.txt"
out=$(SANDRUN="$sandrun" JOB_ID=job-2 SANDRUN_IMAGE=sandrun-sandbox:minimal \
  JOB_STATE_DIR="$base/home-2" bash "$job_script" --commands "$base/commands.txt" \
  "$base/checkout2" "$base/artifacts2" 2>&1)
code=$?
echo "$out"
[ "$code" -eq 3 ] || fail "a job whose command exits 3 exited $code"
grep -qx 'after' <<<"$out" || fail "commands after a failure did not run"
grep -qx 'run-agent-job: exit code 3' <<<"$out" || fail "the failing command's code was not reported"
grep -qx 'run-agent-job: exit code 127' <<<"$out" || fail "a later failure was not reported"
[ "$(cat "$base/checkout2/one.txt" 2>/dev/null)" = one ] || fail "the checkout was not writable"
[ -z "$(containers_of "$base/home-2")" ] || fail "the failed job left its container behind"

# 3. A usage error names the usage.
out=$(bash "$job_script" 2>&1)
code=$?
[ "$code" -eq 2 ] && grep -q 'run-agent-job.sh \[--commands FILE\] CHECKOUT ARTIFACT_DIR' <<<"$out" \
  || fail "no usage on a bad call (exit $code): $out"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
