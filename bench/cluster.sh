#!/usr/bin/env bash
# A 3-node comb against one node (issue 15, docs/benchmarks.md "Replication"): comb bench push
# and consume, sync always, against a single `comb serve`, then against a 3-node cluster on
# loopback (all three on this machine: every fsync and hop shares its cores), through the
# leader and through a follower (which forwards to the leader). Rounds interleave the setups.
#
# Bounded: ROUNDS (default 2) × 3 setups × (push BENCH_DURATION + consume of BENCH_PREFILL).
# Knobs: ROUNDS, BENCH_DURATION (8s), BENCH_PREFILL (300000), CONC (16), COMB_PORT (17800).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-2}
dur=${BENCH_DURATION:-8s}
prefill=${BENCH_PREFILL:-300000}
conc=${CONC:-16}
port=${COMB_PORT:-17800}
work=$(mktemp -d -t comb-bench-cluster.XXXXXX)
comb="$work/comb"
go build -o "$comb" ./cmd/comb
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$work"' EXIT

health() { curl -sf "http://127.0.0.1:$1/health" 2>/dev/null || true; }
start_single() {
  "$comb" serve --addr "127.0.0.1:$port" --data-dir "$(mktemp -d "$work/single.XXXX")" --log-level error >>"$work/single.log" 2>&1 &
  pids=($!)
  for _ in $(seq 100); do [ -n "$(health "$port")" ] && return; sleep 0.1; done
  echo "single node did not start" >&2; exit 1
}
start_cluster() {
  local cluster="" k
  for k in 1 2 3; do cluster+="${cluster:+,}n$k=127.0.0.1:$((port + 10 + k))"; done
  # Peer TLS, the default a cluster runs with (issue 22).
  [ -f "$work/certs/ca.crt" ] || "$comb" certs --dir "$work/certs" --nodes n1,n2,n3 --hosts 127.0.0.1 >/dev/null
  for k in 1 2 3; do
    "$comb" serve --addr "127.0.0.1:$((port + k))" --data-dir "$(mktemp -d "$work/n$k.XXXX")" --log-level error \
      --node-id "n$k" --raft-addr "127.0.0.1:$((port + 10 + k))" --initial-cluster "$cluster" \
      --peer-cert-file "$work/certs/n$k.crt" --peer-key-file "$work/certs/n$k.key" --peer-trusted-ca-file "$work/certs/ca.crt" >>"$work/n$k.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 300); do
    leader_port=""; follower_port=""
    for k in 1 2 3; do
      case "$(health $((port + k)))" in
        *'"role":"leader"'*) leader_port=$((port + k)); leader_pid=${pids[$((k - 1))]} ;;
        *'"role":"follower"'*'"httpAddr"'*) follower_port=$((port + k)) ;;
      esac
    done
    [ -n "$leader_port" ] && [ -n "$follower_port" ] && return
    sleep 0.1
  done
  echo "no leader with a follower that knows it" >&2; exit 1
}
run() { # label url server-pid run-id
  echo "### $1 (load $(cut -d' ' -f1 /proc/loadavg))"
  "$comb" bench push --url "$2" --batch 100 --size 200 --concurrency "$conc" --duration "$dur" --warmup 1s \
    --run-id "$4-push" --server-pid "$3" | grep -E "window|request +ms|CPU" || true
  "$comb" bench consume --url "$2" --batch 100 --size 200 --duration 5s --warmup 0s \
    --prefill "$prefill" --run-id "$4-cons" --server-pid "$3" | grep -E "window|request +ms|CPU" || true
}
for r in $(seq "$rounds"); do
  start_single
  run "one node, round $r" "http://127.0.0.1:$port" "${pids[0]}" "s$r"
  stop
  start_cluster
  run "3 nodes through the leader, round $r" "http://127.0.0.1:$leader_port" "$leader_pid" "l$r"
  run "3 nodes through a follower, round $r" "http://127.0.0.1:$follower_port" "$leader_pid" "f$r"
  stop
done
