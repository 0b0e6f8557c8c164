#!/usr/bin/env bash
# Issue 7 scale run: comb serve over HTTP with P partitions (default 100,000),
# then a clean restart (SIGTERM) and a crash restart (SIGKILL), each timed
# from exec to the first /health 200. Usage: bench/scale/run.sh [P] [sync]
set -euo pipefail
cd "$(dirname "$0")/../.."
P=${1:-100000}
SYNC=${2:-always}
PORT=${PORT:-6690}
DATA=$(mktemp -d /tmp/comb-scale.XXXXXX)
go build -o bin/comb ./cmd/comb
go build -o bin/comb-scale ./bench/scale
start() { ./bin/comb serve --addr 127.0.0.1:$PORT --data-dir "$DATA" --sync "$SYNC" --log-level warn & PID=$!; }
wait_up() {
  local t0=$(date +%s.%N)
  until curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do sleep 0.01; done
  echo "$1: up in $(echo "$(date +%s.%N) - $t0" | bc) s"
}
start; wait_up "first start"
./bin/comb-scale --url "http://127.0.0.1:$PORT" --pid $PID --partitions "$P" ${MESSAGES:+--messages $MESSAGES}
du -sh "$DATA"
kill -TERM $PID; wait $PID || true
start; wait_up "clean restart ($P partitions)"
sleep 1; echo "RSS after clean restart: $(grep VmRSS /proc/$PID/status)  fds: $(ls /proc/$PID/fd | wc -l)"
kill -KILL $PID; wait $PID || true
start; wait_up "crash restart ($P partitions)"
echo "RSS after crash restart: $(grep VmRSS /proc/$PID/status)  fds: $(ls /proc/$PID/fd | wc -l)"
kill -TERM $PID; wait $PID || true
rm -rf "$DATA"
