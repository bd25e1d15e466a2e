#!/usr/bin/env bash
# Exec latency in one warm container, in one run, as ratios against baselines measured alongside:
#   (a) this project's Engine API client (in-process, tests/bench/exec_bench)
#   (b) `docker exec CTR /bin/sh -lc true` through the docker CLI (hyperfine)
#   (c) the same three Engine API calls as three `curl --unix-socket` processes (hyperfine)
# and 32 concurrent execs through the client vs 32 concurrent `docker exec`.
# Needs the set-up (bash scripts/setup). Usage: exec_latency.sh [RUNS] [IMAGE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:-40}
image=${2:-sandrun-sandbox:minimal}
bench="$root/build/tests/bench/exec_bench"
[ -x "$bench" ] || { echo "build first: bash scripts/setup" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine missing: apt-get install hyperfine" >&2; exit 1; }
docker_cli=$(command -v docker)
api=$(curl -fsS --unix-socket /var/run/docker.sock http://docker/version | sed 's/.*"ApiVersion":"\([^"]*\)".*/\1/')

ctr=$("$bench" create "$image")
trap '"$bench" remove "$ctr" >/dev/null 2>&1 || true' EXIT
tmp=$(mktemp -d)
trap '"$bench" remove "$ctr" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

median() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['median']*1000)" "$1"; }

a_json=$("$bench" serial "$ctr" "$runs")
a=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['median_ms'])" "$a_json")
hyperfine -N --warmup 3 --runs "$runs" --export-json "$tmp/b.json" \
  "$docker_cli exec $ctr /bin/sh -lc true" >/dev/null 2>&1
b=$(median "$tmp/b.json")
hyperfine -N --warmup 3 --runs "$runs" --export-json "$tmp/c.json" \
  "bash $here/exec_curl.sh $ctr $api" >/dev/null 2>&1
c=$(median "$tmp/c.json")

conc_json=$("$bench" concurrent "$ctr" 32)
conc=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['wall_ms'])" "$conc_json")
start=$(date +%s%N)
for _ in $(seq 32); do "$docker_cli" exec "$ctr" /bin/sh -lc true & done
wait
cli_conc=$(( ($(date +%s%N) - start) / 1000000 ))

python3 - "$a" "$b" "$c" "$conc" "$cli_conc" "$a_json" "$docker_cli" <<'PY'
import json, sys
a, b, c, conc, cli_conc = map(float, sys.argv[1:6])
detail = json.loads(sys.argv[6])
print(f"engine: docker CLI {sys.argv[7]}")
print(f"(a) client, in-process        median {a:8.2f} ms  (create {detail['create_median_ms']:.2f} + start {detail['start_median_ms']:.2f} + inspect {detail['inspect_median_ms']:.2f}; client CPU {detail['client_cpu_ms_per_exec']:.3f} ms/exec)")
print(f"(b) docker exec CLI           median {b:8.2f} ms")
print(f"(c) three curl processes      median {c:8.2f} ms")
print(f"a/b = {a/b:.3f}   (target <= 0.85)")
print(f"a/c = {a/c:.3f}   (target <= 1.0)")
print(f"client CPU share of an exec: {100*detail['client_cpu_ms_per_exec']/a:.1f}% (the rest is the engine and runc)")
print(f"32 concurrent: client {conc:.0f} ms wall, docker CLI {cli_conc:.0f} ms wall, ratio {conc/cli_conc:.3f}")
PY
