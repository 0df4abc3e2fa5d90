#!/usr/bin/env bash
# Load test of `kiln serve` on loopback with wrk: one classifier bundle in a fresh repository,
# CONNECTIONS clients sending one image each, back to back, for SECONDS; then, from /metrics, the
# batch sizes the server formed, its request counts and where the time went (sums and counts of
# the preprocessing, queue and compute histograms).
#   bench/serve/load.sh KILN BUNDLE IMAGE CONNECTIONS SECONDS [CONFIG_JSON] [DEVICE]
# WRK_THREADS (default 2): the client's threads.
set -euo pipefail
kiln=${1:?usage: load.sh KILN BUNDLE IMAGE CONNECTIONS SECONDS [CONFIG_JSON] [DEVICE]}
bundle=$2 image=$3 connections=$4 seconds=$5 config=${6:-} device=${7:-cpu}
repo=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$repo"' EXIT
mkdir -p "$repo/b0/1"
ln -s "$(realpath "$bundle")" "$repo/b0/1/model.bundle"
[ -n "$config" ] && echo "$config" > "$repo/b0/config.json"
"$kiln" serve --models "$repo" --http-port 0 --grpc-port 0 --metrics-port 0 --device "$device" --http-threads $((connections + 8)) \
  > "$repo/out" 2> "$repo/err" &
server=$!
for _ in $(seq 600); do grep -q "HTTP on" "$repo/out" 2>/dev/null && break; sleep 0.1; done
http=$(grep -o 'HTTP on [0-9.]*:[0-9]*' "$repo/out" | cut -d: -f2)
metrics=$(grep -o 'metrics on [0-9.]*:[0-9]*' "$repo/out" | cut -d: -f2)
echo "config: ${config:-defaults}; $connections connections, $seconds s, device $device"
KILN_IMAGE=$image wrk -t "${WRK_THREADS:-2}" -c "$connections" -d "${seconds}s" --timeout 30s --latency \
  -s "$(dirname "$0")/infer.lua" "http://127.0.0.1:$http" | grep -E "Requests/sec|status|p50|Socket errors|Non-2xx"
curl -s "http://127.0.0.1:$metrics/metrics" |
  grep -E '^kiln_requests_total|^kiln_batch_size_(bucket|sum|count)|^kiln_[a-z_]*_seconds_(sum|count)' | grep -v ' 0$'
kill -TERM $server
wait $server && echo "server exit status 0 after SIGTERM"
