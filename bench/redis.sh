#!/usr/bin/env bash
# Runs one `comb bench` workload against a throwaway redis-server on loopback.
#
#   bench/redis.sh <always|everysec> <workload> [comb bench flags...]
#
# Starts redis-server on 127.0.0.1:$REDIS_PORT (default 16379) in a temporary directory with
# the append-only file on and `appendfsync` set to the first argument, runs
# `$COMB_BENCH bench <workload> --driver redis ...`, then stops the server and deletes its data,
# whatever happened (trap). $COMB_BENCH (comb built with -tags peers, which links the Redis
# driver) defaults to bin/comb-bench, built if missing (make comb-bench).
set -euo pipefail
fsync=${1:?usage: bench/redis.sh <always|everysec> <workload> [flags...]}
shift
case "$fsync" in always|everysec) ;; *) echo "redis.sh: appendfsync must be always or everysec" >&2; exit 2 ;; esac
port=${REDIS_PORT:-16379}
root=$(cd "$(dirname "$0")/.." && pwd)
comb=${COMB_BENCH:-$root/bin/comb-bench}
[ -x "$comb" ] || (cd "$root" && go build -tags peers -o "$comb" ./cmd/comb)
command -v redis-server >/dev/null || { echo "redis.sh: redis-server not installed (apt-get install -y redis-server)" >&2; exit 3; }

dir=$(mktemp -d -t comb-bench-redis.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' \
  --appendonly yes --appendfsync "$fsync" --protected-mode yes --daemonize no \
  --logfile "$dir/redis.log" &
pid=$!
for _ in $(seq 1 100); do
  if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
  kill -0 "$pid" 2>/dev/null || { echo "redis.sh: redis-server exited; log:" >&2; cat "$dir/redis.log" >&2; exit 1; }
  sleep 0.05
done
"$comb" bench "$@" --driver redis --redis-addr "127.0.0.1:$port" --server-pid "$pid" --variant "appendfsync $fsync"
