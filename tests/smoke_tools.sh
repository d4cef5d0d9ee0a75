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
for op in -w -r; do
    port=$((base + 3))
    [ "$op" = -r ] && port=$((base + 4))
    "$tools/nd_rping" -s "127.0.0.1:$port" 2>/dev/null &
    out=$("$tools/nd_rping" -c "127.0.0.1:$port" "$op" -S 65536 -i 200 --json) || fail "nd_rping $op failed"
    wait
    echo "$out" | grep -Eq '^\{"op":"(write|read)","size":65536,"iterations":200,"depth":16,"latency_us":[0-9.]+,"cpu_percent":[0-9.]+,"bytes_per_sec":[0-9]+,"mode":"polling"\}$' ||
        fail "nd_rping $op output: $out"
done

# nd_ping over both transports: the credits must keep every Send covered by a receive.
for tr in shm iwarp; do
    port=$((base + 5))
    [ "$tr" = iwarp ] && port=$((base + 6))
    ND_TRANSPORT=$tr "$tools/nd_ping" -s "127.0.0.1:$port" 2>/dev/null &
    out=$(ND_TRANSPORT=$tr "$tools/nd_ping" -c "127.0.0.1:$port" -S 4096 -i 2000 --json) || fail "nd_ping ($tr) failed"
    wait
    echo "$out" | grep -Eq '^\{"op":"send","size":4096,"iterations":2000,"depth":16,"latency_us":[0-9.]+,"cpu_percent":[0-9.]+,"bytes_per_sec":[0-9]+,"mode":"polling"\}$' ||
        fail "nd_ping ($tr) output: $out"
done
for tr in shm iwarp; do
    port=$((base + 7))
    [ "$tr" = iwarp ] && port=$((base + 8))
    ND_TRANSPORT=$tr "$tools/nd_rpingpong" -s "127.0.0.1:$port" 2>/dev/null &
    out=$(ND_TRANSPORT=$tr "$tools/nd_rpingpong" -c "127.0.0.1:$port" -S 64 -i 2000 --json) || fail "nd_rpingpong ($tr) failed"
    wait
    echo "$out" | grep -Eq '^\{"op":"write","size":64,"iterations":2000,"latency_us":[0-9.]+,"cpu_percent":[0-9.]+\}$' ||
        fail "nd_rpingpong ($tr) output: $out"
done

out=$("$tools/nd_mrlat" -S 65536 -i 100 --json) || fail "nd_mrlat failed"
echo "$out" | grep -Eq '^\{"size":65536,"iterations":100,"register_us":[0-9.]+,"deregister_us":[0-9.]+\}$' ||
    fail "nd_mrlat output: $out"
echo "tools ok"
