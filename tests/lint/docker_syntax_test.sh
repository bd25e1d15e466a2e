#!/usr/bin/env bash
# Docker's option syntax ("seccomp=<json>", "no-new-privileges") belongs to the Docker executor:
# the plan says what (a seccomp profile, no_new_privileges), the back-end says how. Fails when
# either spelling appears in a product source file (comments included) outside the folders
# allowed below. Tests are not scanned: they spell out what they check.
# Usage: docker_syntax_test.sh SOURCE_DIR
set -euo pipefail
root=${1:?usage: docker_syntax_test.sh SOURCE_DIR}
cd "$root"
# The allowed places, each with why:
allowed=(
  # The Docker executor: builds HostConfig.SecurityOpt from the plan.
  sandbox/executors/docker/
  # The loader of profiles/containers/*.json, which hold Engine API HostConfig verbatim: it must
  # read their Docker syntax to refuse a preset that weakens the sandbox.
  sandbox/harden/container_preset.h
  sandbox/harden/container_preset.cc
)
found=0
while IFS= read -r -d '' file; do
  skip=0
  for a in "${allowed[@]}"; do
    case $file in "$a"*) skip=1 ;; esac
  done
  [ "$skip" = 0 ] || continue
  if grep -nHE '(^|[^A-Za-z_])seccomp=|no-new-privileges' "$file"; then found=1; fi
done < <(find runner sandbox -type f \( -name '*.cc' -o -name '*.h' -o -name 'CMakeLists.txt' \) -print0)
if [ "$found" = 1 ]; then
  echo "Docker option syntax outside the Docker executor (allowed: ${allowed[*]})" >&2
  exit 1
fi
echo "no Docker option syntax outside: ${allowed[*]}"
