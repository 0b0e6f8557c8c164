#!/usr/bin/env bash
# Runs one `comb bench` workload against a throwaway nats-server (JetStream) on loopback.
#
#   bench/nats.sh <default|always> <workload> [comb bench flags...]
#
# Starts `nats-server -js` on 127.0.0.1:$NATS_PORT (default 14222) with file storage in a
# temporary directory, runs `$COMB_BENCH bench <workload> --driver nats ...`, then stops the
# server and deletes its data, whatever happened (trap). $COMB_BENCH (comb built with -tags
# peers, which links the NATS driver) defaults to bin/comb-bench, built if missing.
#
# "always" asks for `sync_interval: always` (fsync every write). That JetStream option arrived
# in nats-server 2.10; Debian 12 ships 2.9.10, which rejects it, so on such a server this script
# says so and exits 3 (run-all.sh then reports the default setting only). The default flushes
# to the OS at once and fsyncs on a timer (about every 2 minutes in 2.9), so an acknowledged
# message can be lost by a machine crash, unlike comb --sync always or Redis appendfsync always.
set -euo pipefail
mode=${1:?usage: bench/nats.sh <default|always> <workload> [flags...]}
shift
case "$mode" in default|always) ;; *) echo "nats.sh: mode must be default or always" >&2; exit 2 ;; esac
port=${NATS_PORT:-14222}
root=$(cd "$(dirname "$0")/.." && pwd)
comb=${COMB_BENCH:-$root/bin/comb-bench}
[ -x "$comb" ] || (cd "$root" && go build -tags peers -o "$comb" ./cmd/comb)
command -v nats-server >/dev/null || { echo "nats.sh: nats-server not installed (apt-get install -y nats-server)" >&2; exit 3; }

dir=$(mktemp -d -t comb-bench-nats.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

{
  echo "listen: 127.0.0.1:$port"
  echo "jetstream {"
  echo "  store_dir: \"$dir/js\""
  [ "$mode" = always ] && echo "  sync_interval: always"
  echo "}"
} > "$dir/nats.conf"
if [ "$mode" = always ] && ! nats-server -c "$dir/nats.conf" -t >"$dir/check.log" 2>&1; then
  echo "nats.sh: $(nats-server --version) rejects sync_interval: always ($(tr "\n" " " < "$dir/check.log")); needs nats-server >= 2.10" >&2
  exit 3
fi

nats-server -c "$dir/nats.conf" -l "$dir/nats.log" &
pid=$!
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { echo "nats.sh: nats-server exited; log:" >&2; cat "$dir/nats.log" >&2; exit 1; }
  sleep 0.05
done
"$comb" bench "$@" --driver nats --nats-url "nats://127.0.0.1:$port" --server-pid "$pid" --variant "sync $mode"
