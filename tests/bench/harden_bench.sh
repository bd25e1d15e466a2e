#!/usr/bin/env bash
# The per-command cost of host hardening: median of 15 repetitions of each harden_bench case
# (spawn+exec of /bin/true with and without the default host profile, the same through
# HostExecutor, profile preparation, per-syscall filter cost).
#   bash tests/bench/harden_bench.sh [build-dir]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
bench="$build/tests/harden_bench"
[ -x "$bench" ] || { echo "harden_bench: build the harden_bench target first ($bench)" >&2; exit 1; }
"$bench" --benchmark_repetitions=15 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true \
  --benchmark_min_time=0.2 2>/dev/null | grep -E '_median|^Benchmark|^-'
