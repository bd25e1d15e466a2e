#!/usr/bin/env bash
# The per-command cost of the approvals policy: medians of 20 repetitions of each policy_bench
# case, and PASS/FAIL for the target (BM_Policy5SegmentPipeline <= 50 us median: a 5-segment
# pipeline evaluated under security=allowlist, executable resolution on the real file system
# included). A script, never a ctest test: timings depend on the machine's load.
#   bash tests/bench/policy_bench.sh [build-dir]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
bench="$build/tests/policy_bench"
limit_us=50
[ -x "$bench" ] || { echo "policy_bench: build the policy_bench target first ($bench)" >&2; exit 1; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
out="$("$bench" --benchmark_repetitions=20 --benchmark_report_aggregates_only=true 2>/dev/null)"
grep -E '_median|^Benchmark|^-' <<<"$out"
median="$(awk '$1 == "BM_Policy5SegmentPipeline_median" { print $2 }' <<<"$out")"
unit="$(awk '$1 == "BM_Policy5SegmentPipeline_median" { print $3 }' <<<"$out")"
if [ -z "$median" ] || [ "$unit" != "us" ]; then
  echo "FAIL: no median for BM_Policy5SegmentPipeline in microseconds" >&2
  exit 1
fi
if awk -v m="$median" -v l="$limit_us" 'BEGIN { exit !(m <= l) }'; then
  echo "PASS: BM_Policy5SegmentPipeline median ${median} us <= ${limit_us} us"
else
  echo "FAIL: BM_Policy5SegmentPipeline median ${median} us > ${limit_us} us"
  exit 1
fi
