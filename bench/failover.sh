#!/usr/bin/env bash
# Failover of a 3-node comb on loopback (issue 22, docs/benchmarks.md "Failover"):
#  1. KILLS times: kill -9 of the leader, then the time to the first push acknowledged through
#     a survivor and to the first pop that answers 200 through the other survivor (each polled
#     every 20 ms with curl); the killed node is restarted before the next kill.
#  2. Elections under load: LOAD_DURATION of `comb bench push` (CONC connections, sync always)
#     through the leader; every node's comb_raft_leader_changes_total before and after.
#
# Bounded: KILLS (default 10) × at most 15 s, plus LOAD_DURATION (default 60s).
# Knobs: KILLS, LOAD_DURATION, CONC (16), COMB_PORT (17900), PEER_FLAGS (default: certificates
# made by `comb certs` when the binary has the verb, else none).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
kills=${KILLS:-10}
load=${LOAD_DURATION:-60s}
conc=${CONC:-16}
port=${COMB_PORT:-17900}
work=$(mktemp -d -t comb-bench-failover.XXXXXX)
comb="$work/comb"
go build -o "$comb" ./cmd/comb
declare -A pid dir
stop() { for k in "${!pid[@]}"; do kill -9 "${pid[$k]}" 2>/dev/null || true; wait "${pid[$k]}" 2>/dev/null || true; done; }
trap 'stop; rm -rf "$work"' EXIT

if [ -z "${PEER_FLAGS+x}" ]; then
  if "$comb" certs -h >/dev/null 2>&1; then
    "$comb" certs --dir "$work/certs" --nodes n1,n2,n3 --hosts 127.0.0.1,localhost >/dev/null
    peer() { echo "--peer-cert-file $work/certs/$1.crt --peer-key-file $work/certs/$1.key --peer-trusted-ca-file $work/certs/ca.crt"; }
  else
    peer() { :; }
  fi
else
  peer() { echo "$PEER_FLAGS"; }
fi
cluster=""
for k in 1 2 3; do cluster+="${cluster:+,}n$k=127.0.0.1:$((port + 10 + k))"; done
start() { # k
  [ -n "${dir[$1]:-}" ] || dir[$1]=$(mktemp -d "$work/n$1.XXXX")
  # shellcheck disable=SC2046
  "$comb" serve --addr "127.0.0.1:$((port + $1))" --data-dir "${dir[$1]}" --log-level error \
    --node-id "n$1" --raft-addr "127.0.0.1:$((port + 10 + $1))" --initial-cluster "$cluster" $(peer "n$1") >>"$work/n$1.log" 2>&1 &
  pid[$1]=$!
}
health() { curl -sf -m 1 "http://127.0.0.1:$((port + $1))/health" 2>/dev/null || true; }
leader() { # prints the leader's k once one leads and the others follow it
  local n l
  for _ in $(seq 600); do
    l=""; n=0
    for k in "${!pid[@]}"; do
      case "$(health "$k")" in
        *'"role":"leader"'*) l=$k; n=$((n + 1)) ;;
        *'"role":"follower"'*'"httpAddr":"'*) n=$((n + 1)) ;;
      esac
    done
    [ -n "$l" ] && [ "$n" = 3 ] && { echo "$l"; return; }
    sleep 0.05
  done
  echo "no leader" >&2; exit 1
}
now() { date +%s%N; }
ms() { echo $((($(now) - $1) / 1000000)); }
push() { curl -s -m 1 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  "http://127.0.0.1:$((port + $1))/api/v1/push" -d "{\"items\":[{\"queue\":\"$2\",\"partition\":\"p\",\"payload\":{\"t\":$(now)}}]}" || true; }
pop() { curl -s -m 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port + $1))/api/v1/pop/queue/$2?consumerGroup=fo&batch=1&autoAck=true" || true; }

for k in 1 2 3; do start "$k"; done
L=$(leader)
echo "### failover: kill -9 of the leader, $kills times (load $(cut -d' ' -f1 /proc/loadavg))"
pushes=() pops=()
for r in $(seq "$kills"); do
  a="" b=""
  for k in 1 2 3; do [ "$k" = "$L" ] && continue; if [ -z "$a" ]; then a=$k; else b=$k; fi; done
  q="fo$r-$RANDOM"
  push "$a" "$q" >/dev/null
  t0=$(now)
  kill -9 "${pid[$L]}"; wait "${pid[$L]}" 2>/dev/null || true
  tp="" to=""
  while [ -z "$tp" ] || [ -z "$to" ]; do
    [ "$(ms "$t0")" -gt 15000 ] && break
    [ -z "$tp" ] && [ "$(push "$a" "$q")" = 201 ] && tp=$(ms "$t0")
    [ -z "$to" ] && [ "$(pop "$b" "$q")" = 200 ] && to=$(ms "$t0")
    sleep 0.02
  done
  echo "kill $r: leader n$L, first push ${tp:-none} ms, first pop ${to:-none} ms"
  pushes+=("${tp:-99999}"); pops+=("${to:-99999}")
  start "$L"
  L=$(leader)
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minmax() { printf '%s\n' "$@" | sort -n | sed -n '1p;$p' | paste -sd/; }
echo "first push ms: median $(median "${pushes[@]}") (min/max $(minmax "${pushes[@]}"))"
echo "first pop ms:  median $(median "${pops[@]}") (min/max $(minmax "${pops[@]}"))"

changes() { local s=0 k v; for k in 1 2 3; do
  v=$(curl -sf "http://127.0.0.1:$((port + k))/metrics" | awk '/^comb_raft_leader_changes_total/ {print $2}' | head -1)
  s=$((s + ${v:-0})); done; echo "$s"; }
c0=$(changes)
echo "### elections under load: comb bench push through the leader n$L for $load, $conc connections (load $(cut -d' ' -f1 /proc/loadavg))"
"$comb" bench push --url "http://127.0.0.1:$((port + L))" --batch 100 --size 200 --concurrency "$conc" --duration "$load" \
  --warmup 1s --run-id "fol-$RANDOM" --server-pid "${pid[$L]}" | grep -E "window|request +ms|CPU" || true
c1=$(changes)
echo "leader changes during the load: $((c1 - c0)) (load $(cut -d' ' -f1 /proc/loadavg))"
