#!/usr/bin/env bash
# Foreground `exec true` (POST /v1/tools/exec) through `sandrun serve`: p50/p99 over a TLS
# keep-alive connection on loopback vs a keep-alive connection on the unix socket, measured
# alongside in one run. One curl process per transport sends every request on one connection
# (many URLs on one command line) and reports each request's time_total. Sends a bearer token
# on both, as the multi-tenant server requires on TCP. Loopback only; bounded (RUNS <= 2000,
# every curl has a --max-time); the server, its containers and the temporary home are removed.
# Usage: tls_latency.sh [RUNS] [sandbox|host]   (default 200, sandbox: the minimal image)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:-200}
mode=${2:-sandbox}
bin="$root/build/sandrun"
[ -x "$bin" ] || { echo "build first: cmake --build build --target sandrun" >&2; exit 1; }
[[ "$runs" =~ ^[0-9]+$ ]] && [ "$runs" -ge 10 ] && [ "$runs" -le 2000 ] ||
  { echo "RUNS must be 10..2000" >&2; exit 2; }
case "$mode" in
  sandbox) config='{"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}}' ;;
  host) config='{"sandbox": {"mode": "off"}}' ;;
  *) echo "mode: sandbox or host" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
home="$tmp/home"
mkdir -m 700 "$home"
echo "$config" >"$home/config.json"
export SANDRUN_HOME="$home"
server=""
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  "$bin" sandbox recreate --all >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
  -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1
token=$("$bin" token create --tenant t1 --role admin 2>/dev/null)
# Host commands run as nobody (a root server): a workspace and a PATH it can use.
mkdir -m 777 "$tmp/ws"
chmod 755 "$tmp"
PATH=/usr/local/bin:/usr/bin:/bin "$bin" --workspace "$tmp/ws" serve --listen 127.0.0.1:0 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" \
  >/dev/null 2>"$tmp/serve.err" &
server=$!
url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^sandrun: listening on \(https:.*\)$/\1/p' "$tmp/serve.err")
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$tmp/serve.err" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "the server did not listen" >&2; exit 1; }

body='{"tool":"exec","command":"true"}'
# run LABEL N CURL-ARGS... URL: N requests on one connection; prints one time (ms) a line.
run() {
  local label=$1 n=$2 target=${*: -1}
  local args=("${@:3:$#-3}")
  local urls=()
  for _ in $(seq "$n"); do urls+=("$target"); done
  curl -sS --max-time 600 "${args[@]}" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -d "$body" -w '\nT=%{time_total} C=%{num_connects}\n' \
    "${urls[@]}" >"$tmp/$label.out"
  local ok
  ok=$(grep -c '"exitCode":0' "$tmp/$label.out" || true)
  [ "$ok" -eq "$n" ] || { echo "$label: $ok of $n execs exited 0" >&2; head -c 600 "$tmp/$label.out" >&2; exit 1; }
  sed -n 's/^T=\([0-9.]*\) C=.*/\1/p' "$tmp/$label.out" | awk '{ printf "%.3f\n", $1 * 1000 }'
}
stats() {
  sort -n | awk -v label="$1" '{ v[NR] = $1 } END {
    p50 = v[int((NR - 1) * 0.50) + 1]; p99 = v[int((NR - 1) * 0.99) + 1]
    printf "%-28s n=%d  p50 %8.2f ms  p99 %8.2f ms  min %8.2f ms\n", label, NR, p50, p99, v[1] }'
}

# Warm-up: the sandbox container is created on the first exec; both transports' first requests.
run warm-unix 5 --unix-socket "$home/sandrun.sock" http://sandrun/v1/tools/exec >/dev/null
run warm-tls 5 --cacert "$tmp/cert.pem" "$url/v1/tools/exec" >/dev/null
run unix "$runs" --unix-socket "$home/sandrun.sock" http://sandrun/v1/tools/exec >"$tmp/unix.ms"
run tls "$runs" --cacert "$tmp/cert.pem" "$url/v1/tools/exec" >"$tmp/tls.ms"
# One TLS connection for all of them (num_connects is 1 for the first request only).
connects=$(awk -F'C=' '/^T=/ { n += $2 } END { print n }' "$tmp/tls.out")
echo "exec true ($mode), $runs requests per transport, keep-alive; TLS connections opened: $connects"
stats "unix socket" <"$tmp/unix.ms"
stats "TLS (loopback, keep-alive)" <"$tmp/tls.ms"
