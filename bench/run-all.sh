#!/usr/bin/env bash
# `make bench-all`: every comb bench workload against comb (--sync always), Redis Streams
# (appendfsync always and everysec) and NATS JetStream (default sync, and sync_interval: always
# where the installed nats-server supports it), all on loopback on this machine, then one
# markdown table. Every server is fresh per run and stopped afterwards (trap).
#
# Bounded: each run is BENCH_WARMUP + BENCH_DURATION (default 1s + 4s) plus the consume
# prefill; about 25 runs in all. Knobs (environment): BENCH_DURATION, BENCH_WARMUP,
# BENCH_PREFILL (consume backlog, default 3000000), BENCH_WORKLOADS (default all five),
# BENCH_PEERS (default "redis nats"), COMB_PORT (default 16632), BENCH_OUT (result directory).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dur=${BENCH_DURATION:-4s}
warm=${BENCH_WARMUP:-1s}
# The consume backlog must outlast warmup + window: at 300k msg/s, 5 s drain 1.5 M.
prefill=${BENCH_PREFILL:-3000000}
workloads=${BENCH_WORKLOADS:-"push consume e2e fanout longpoll"}
peers=${BENCH_PEERS:-"redis nats"}
port=${COMB_PORT:-16632}
out=${BENCH_OUT:-$(mktemp -d -t comb-bench-all.XXXXXX)}
mkdir -p "$out"
export COMB="$out/comb"
go build -o "$COMB" ./cmd/comb
# The peers' drivers are only in a binary built with -tags peers (issue 26: the server links no
# peer client); bench/redis.sh and bench/nats.sh run that one.
export COMB_BENCH="$out/comb-bench"
go build -tags peers -o "$COMB_BENCH" ./cmd/comb

# The same shape for every server (issue 6): 200-byte payloads, batch 100.
flags_for() {
  case "$1" in
    push)     echo "--batch 100 --size 200 --partitions 16 --concurrency 16" ;;
    consume)  echo "--batch 100 --size 200 --partitions 16 --concurrency 16 --groups 1 --prefill $prefill" ;;
    e2e)      echo "--batch 100 --size 200 --partitions 16 --concurrency 16 --producers 4 --rate 100000 --wait-ms 1000" ;;
    fanout)   echo "--batch 100 --size 200 --partitions 16 --concurrency 20 --producers 4 --groups 10 --wait-ms 1000" ;;
    longpoll) echo "--batch 100 --size 200 --concurrency 200 --producers 4 --rate 1000 --wait-ms 2000" ;;
  esac
}

comb_pid=""
comb_dir=""
stop_comb() {
  if [ -n "$comb_pid" ]; then kill "$comb_pid" 2>/dev/null || true; wait "$comb_pid" 2>/dev/null || true; fi
  comb_pid=""
  [ -n "$comb_dir" ] && rm -rf "$comb_dir"
  comb_dir=""
}
trap stop_comb EXIT INT TERM

start_comb() {
  if curl -fsS -m 1 "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    echo "run-all: something already answers on 127.0.0.1:$port; set COMB_PORT" >&2
    exit 1
  fi
  comb_dir=$(mktemp -d -t comb-bench-data.XXXXXX)
  "$COMB" serve --addr "127.0.0.1:$port" --data-dir "$comb_dir/data" --sync always --log-level warn >"$out/comb-serve.log" 2>&1 &
  comb_pid=$!
  for _ in $(seq 1 100); do
    if curl -fsS -m 1 "http://127.0.0.1:$port/health" >/dev/null 2>&1; then return 0; fi
    kill -0 "$comb_pid" 2>/dev/null || { echo "run-all: comb serve exited; see $out/comb-serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "run-all: comb serve did not answer /health" >&2
  exit 1
}

run() { # name, then the command; keeps the JSON line, shows the summary
  local name=$1; shift
  echo "== $name" >&2
  if "$@" --duration "$dur" --warmup "$warm" --json >"$out/$name.json" 2>"$out/$name.log"; then
    grep -v '^prefilling' "$out/$name.log" | sed 's/^/   /' >&2 || true
  else
    rc=$?
    echo "   skipped or failed (exit $rc): $(tail -1 "$out/$name.log")" >&2
    rm -f "$out/$name.json"
  fi
}

for wl in $workloads; do
  start_comb
  sleep 1
  idle=$(awk '/VmRSS/ {print $2 * 1024}' "/proc/$comb_pid/status")
  echo "comb idle RSS before $wl: $((idle / 1000000)) MB" | tee -a "$out/idle-rss.txt" >&2
  # shellcheck disable=SC2046
  run "comb-$wl" "$COMB" bench "$wl" --url "http://127.0.0.1:$port" --server-pid "$comb_pid" --variant "sync always" $(flags_for "$wl")
  stop_comb
  for peer in $peers; do
    case "$peer" in
      redis) modes="always everysec" ;;
      nats)  modes="default always" ;;
      *) echo "run-all: unknown peer $peer" >&2; exit 2 ;;
    esac
    for mode in $modes; do
      # shellcheck disable=SC2046
      run "$peer-$mode-$wl" bash "bench/$peer.sh" "$mode" "$wl" $(flags_for "$wl")
    done
  done
done

echo
echo "Results in $out ($(date -u +%Y-%m-%d), $(nproc) vCPU, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo))"
echo
"$COMB" bench table "$out"/*.json
