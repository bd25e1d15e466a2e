#!/usr/bin/env bash
# A CI job that runs an agent's shell commands against the job's checkout, each in sandrun's
# sandbox: no network, read-only root, no capabilities; the checkout is mounted read-write at
# /workspace and the commands run as its owner. Copy this file into your repository.
#
#   run-agent-job.sh [--commands FILE] CHECKOUT ARTIFACT_DIR
#
# FILE holds the agent's commands, one shell command a line (blank lines and # comments are
# skipped); without it a short demo runs. Each command's output goes to the job log and to
# ARTIFACT_DIR/agent.log; what the commands leave in CHECKOUT/agent-out/ is copied to
# ARTIFACT_DIR. Every command runs even when one fails; the job exits with the first failing
# command's exit code (125: refused by policy, 123: no sandbox), and the job's sandbox is removed
# whatever happens.
#
# Environment: SANDRUN (the binary; default: sandrun on PATH), JOB_ID (the sandbox session;
# default $CI_JOB_ID on GitLab, $GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT on GitHub), SANDRUN_IMAGE
# (default sandrun-sandbox:bookworm), JOB_STATE_DIR (the job's own SANDRUN_HOME; default a new
# temporary directory, removed at the end).
#
# GitHub Actions (a self-hosted runner with dockerd and the sandrun .deb installed):
#   jobs:
#     agent:
#       runs-on: [self-hosted, linux]
#       steps:
#         - uses: actions/checkout@v4
#         - run: sudo scripts/examples/ci/run-agent-job.sh --commands agent-commands.txt "$PWD" out
#         - uses: actions/upload-artifact@v4
#           if: always()
#           with: {name: agent-out, path: out}
#
# GitLab CI (a shell executor with dockerd and sandrun installed):
#   agent:
#     script:
#       - scripts/examples/ci/run-agent-job.sh --commands agent-commands.txt "$CI_PROJECT_DIR" out
#     artifacts:
#       when: always
#       paths: [out/]
set -euo pipefail

commands_file=""
if [ "${1:-}" = --commands ]; then
  commands_file=$2
  shift 2
fi
if [ $# -ne 2 ]; then
  sed -n '6,7p' "$0" >&2
  exit 2
fi
checkout=$(cd "$1" && pwd)
mkdir -p "$2"
artifacts=$(cd "$2" && pwd)
sandrun=${SANDRUN:-sandrun}
job=${JOB_ID:-${CI_JOB_ID:-${GITHUB_RUN_ID:-local}-${GITHUB_RUN_ATTEMPT:-1}}}
image=${SANDRUN_IMAGE:-sandrun-sandbox:bookworm}

# The job's own state dir: its config, its audit log, its containers (labelled with it), nothing
# shared with other jobs on the same runner.
state_dir=${JOB_STATE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sandrun-job-XXXXXX")}
mkdir -p "$state_dir"
chmod 700 "$state_dir"
export SANDRUN_HOME=$state_dir
cat >"$SANDRUN_HOME/config.json" <<JSON
{
  "sandbox": {"mode": "all", "scope": "session", "workspaceAccess": "rw",
              "docker": {"image": "$image"}},
  "tools": {"exec": {"timeoutSeconds": 600}}
}
JSON

finish() {
  # The job's audit trail is an artifact too; then its sandbox goes.
  cp "$SANDRUN_HOME/audit/audit.jsonl" "$artifacts/audit.jsonl" 2>/dev/null || true
  "$sandrun" sandbox prune --session "$job" >/dev/null ||
    echo "run-agent-job: pruning the job's sandbox failed" >&2
  [ -n "${JOB_STATE_DIR:-}" ] || rm -rf "$state_dir"
}
trap finish EXIT

if [ -n "$commands_file" ]; then
  mapfile -t commands < "$commands_file"
else
  commands=(
    'echo "agent: uid $(id -u) in $PWD"'
    'ls -1'
    'mkdir -p agent-out && ls -1p | grep -v / > agent-out/files.txt && echo "listed $(wc -l < agent-out/files.txt) files"'
  )
fi

status=0
for command in "${commands[@]}"; do
  case "$command" in '' | '#'*) continue ;; esac
  echo "\$ $command" | tee -a "$artifacts/agent.log"
  code=0
  "$sandrun" --session "$job" --workspace "$checkout" exec -- "$command" 2>&1 \
    | tee -a "$artifacts/agent.log" || code=${PIPESTATUS[0]}
  if [ "$code" -ne 0 ]; then
    echo "run-agent-job: exit code $code" | tee -a "$artifacts/agent.log"
    [ "$status" -ne 0 ] || status=$code
  fi
done

if [ -d "$checkout/agent-out" ]; then
  cp -r "$checkout/agent-out" "$artifacts/"
fi
echo "run-agent-job: job $job done (exit $status); artifacts in $artifacts"
exit "$status"
