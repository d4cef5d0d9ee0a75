#!/bin/sh
# SPDX-License-Identifier: MIT
# Smoke test of the tools: each runs client/server on this host for a moment and its
# --json output must parse with the fields it promises. Usage: smoke_tools.sh <tools dir>
set -u
tools=$1
base=$((20000 + $$ % 5000))    # below the ephemeral range other tests draw from
fail() { echo "smoke: $*"; exit 1; }
# Servers left behind on failure would hold ctest's output pipe open: take them down.
trap 'kill $(jobs -p) 2>/dev/null' EXIT

"$tools/nd_pingpong" -s "127.0.0.1:$base" 2>/dev/null &
out=$("$tools/nd_pingpong" -c "127.0.0.1:$base" -S 8 -i 2000 --json) || fail "nd_pingpong polling failed"
wait
echo "$out" | grep -Eq '^\{"size":8,"iterations":2000,"latency_us":[0-9.]+,"cpu_percent":[0-9.]+,"bytes_per_sec":[0-9]+,"syscalls_per_roundtrip":-?[0-9.]+,"mode":"polling"\}$' ||
    fail "nd_pingpong output: $out"

"$tools/nd_pingpong" -s "127.0.0.1:$((base + 1))" 2>/dev/null &
out=$("$tools/nd_pingpong" -c "127.0.0.1:$((base + 1))" -b -S 64 -i 500 --json) || fail "nd_pingpong blocking failed"
wait
echo "$out" | grep -q '"mode":"blocking"' || fail "nd_pingpong -b output: $out"

"$tools/nd_conn" -s "127.0.0.1:$((base + 2))" -n 1000000 2>/dev/null &
server=$!
out=$("$tools/nd_conn" -c "127.0.0.1:$((base + 2))" -d 0.5 --json) || fail "nd_conn failed"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
echo "$out" | grep -Eq '^\{"connections":[1-9][0-9]*,.*"failures":0,"timeouts":0\}$' || fail "nd_conn output: $out"
echo "tools ok"
