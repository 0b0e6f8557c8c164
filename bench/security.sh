#!/usr/bin/env bash
# The cost of JWT auth and of encryption at rest against off (issue 11, docs/benchmarks.md
# "Security"): comb bench push and consume against a fresh `comb serve` (sync always) per run,
# in four variants: off, auth (HS256, every request with one Bearer token), an encrypted queue
# (QUEEN_ENCRYPTION_KEY, the bench queues configured encryptionEnabled), both. After each
# encrypted run it checks that no file of the data directory holds the payload in clear.
#
# Bounded: ROUNDS (default 2) × 4 variants × (push BENCH_DURATION + consume of BENCH_PREFILL).
# Knobs: ROUNDS, BENCH_DURATION (8s), BENCH_PREFILL (1500000), COMB_PORT (17700). Needs curl
# and openssl (to sign the token).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-2}
dur=${BENCH_DURATION:-8s}
prefill=${BENCH_PREFILL:-1500000}
port=${COMB_PORT:-17700}
work=$(mktemp -d -t comb-bench-security.XXXXXX)
comb="$work/comb"
go build -o "$comb" ./cmd/comb
secret=bench-secret
key=$(printf 'ab%.0s' $(seq 32))
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
token() {
  local now h p
  now=$(date +%s)
  h=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
  p=$(printf '{"sub":"bench","role":"read-write","iat":%d,"exp":%d}' "$now" $((now + 7200)) | b64url)
  printf '%s.%s.%s' "$h" "$p" "$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -hmac "$secret" -binary | b64url)"
}

one() { # variant auth(0|1) encrypted(0|1) round
  local name=$1 auth=$2 enc=$3 run="sec$4$1" dir url tok="" env=()
  run=${run//+/-}
  dir=$(mktemp -d "$work/data.XXXX")
  url="http://127.0.0.1:$port"
  [ "$auth" = 1 ] && env+=(JWT_ENABLED=true JWT_SECRET=$secret) && tok=$(token)
  [ "$enc" = 1 ] && env+=(QUEEN_ENCRYPTION_KEY=$key)
  env "${env[@]}" "$comb" serve --addr "127.0.0.1:$port" --data-dir "$dir" --log-level error &
  pid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "$url/health" && break; sleep 0.1; done
  if [ "$enc" = 1 ]; then
    for w in push cons; do
      curl -sf -o /dev/null ${tok:+-H "Authorization: Bearer $tok"} -XPOST "$url/api/v1/configure" \
        -d "{\"queue\":\"bench-$run-$w-q0\",\"options\":{\"encryptionEnabled\":true}}"
    done
  fi
  echo "### $name (round $4, load $(cut -d' ' -f1 /proc/loadavg))"
  COMB_BENCH_TOKEN=$tok "$comb" bench push --url "$url" --batch 100 --size 200 --duration "$dur" --warmup 1s \
    --run-id "$run-push" --server-pid "$pid" | grep -E "window|CPU"
  COMB_BENCH_TOKEN=$tok "$comb" bench consume --url "$url" --batch 100 --size 200 --duration 5s --warmup 0s \
    --prefill "$prefill" --run-id "$run-cons" --server-pid "$pid" | grep -E "window|CPU"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  if [ "$enc" = 1 ]; then
    # comb bench payloads are padded with x: none of that padding may reach the disk in clear.
    echo "files holding the payload in clear: $(grep -rl xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx "$dir" | wc -l)"
  fi
  rm -rf "$dir"
}

for r in $(seq "$rounds"); do
  one off 0 0 "$r"
  one auth 1 0 "$r"
  one encrypted 0 1 "$r"
  one auth+encrypted 1 1 "$r"
done
