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
# Three SGEs per message: the server learns the count from the client (its queue pair must
# take them), past the inline sizes.
"$tools/nd_pingpong" -s "127.0.0.1:$((base + 30))" 2>/dev/null &
out=$("$tools/nd_pingpong" -c "127.0.0.1:$((base + 30))" -n 3 -S 4096 -i 500 --json) || fail "nd_pingpong -n 3 failed"
wait
echo "$out" | grep -q '"size":4096' || fail "nd_pingpong -n 3 output: $out"

# -N (ndpingpong's order, its 16384-deep queues) sweeping sizes on both transports: over
# iwarp a Send completes after the peer's next message can arrive, so the server must not
# take the client's next control message for the run's.
for t in shm iwarp; do
    if [ "$t" = shm ]; then port=$((base + 40)); else port=$((base + 41)); fi
    ND_TRANSPORT=$t "$tools/nd_pingpong" -s "127.0.0.1:$port" -N 2>/dev/null &
    out=$(ND_TRANSPORT=$t "$tools/nd_pingpong" -c "127.0.0.1:$port" -p -N -a -M 64 -i 300 --json) ||
        fail "nd_pingpong -N -a on $t failed: $out"
    wait $! || fail "nd_pingpong -N server on $t failed"
    [ "$(echo "$out" | grep -c '"size":')" = 7 ] || fail "nd_pingpong -N -a on $t output: $out"
done
# -T (perftest's work of a turn) goes with -N only; the server learns it from the client.
"$tools/nd_pingpong" -c "127.0.0.1:$((base + 42))" -T -S 8 > /dev/null 2>&1 && fail "nd_pingpong took -T without -N"
"$tools/nd_pingpong" -s "127.0.0.1:$((base + 43))" -N -I -q 512 2>/dev/null &
out=$("$tools/nd_pingpong" -c "127.0.0.1:$((base + 43))" -N -T -I -q 512 -S 8 -i 2000 --json) ||
    fail "nd_pingpong -N -T failed: $out"
wait $! || fail "nd_pingpong -N -T server failed"
echo "$out" | grep -Eq '^\{"size":8,"iterations":2000,"latency_us":[0-9.]+,' || fail "nd_pingpong -N -T output: $out"

"$tools/nd_conn" -s "127.0.0.1:$((base + 2))" -n 1000000 2>/dev/null &
server=$!
out=$("$tools/nd_conn" -c "127.0.0.1:$((base + 2))" -d 0.5 --json) || fail "nd_conn failed"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
echo "$out" | grep -Eq '^\{"connections":[1-9][0-9]*,.*"failures":0,"timeouts":0\}$' || fail "nd_conn output: $out"
# -n on both sides, two threads each: exactly that many, the server reports its Accepts and ends.
"$tools/nd_conn" -s "127.0.0.1:$((base + 20))" -t 2 -n 300 --json > "${TMPDIR:-/tmp}/nd_conn_srv.$$" 2>/dev/null &
server=$!
out=$("$tools/nd_conn" -c "127.0.0.1:$((base + 20))" -t 2 -n 300 --json) || fail "nd_conn -n failed: $out"
wait "$server" || fail "nd_conn -n server failed"
srv=$(cat "${TMPDIR:-/tmp}/nd_conn_srv.$$")
rm -f "${TMPDIR:-/tmp}/nd_conn_srv.$$"
echo "$out" | grep -Eq '^\{"connections":299,.*"failures":0,"timeouts":0\}$' || fail "nd_conn -n output: $out"
echo "$srv" | grep -Eq '^\{"accepted":300,"accept_us":[0-9.]+,"failures":0\}$' || fail "nd_conn -n server: $srv"
# pair <transport> <port> <tool> <JSON line pattern> <client options...>: server and client
# of <tool> on this host over <transport>; the client's --json line must match. The server
# takes $SERVER_ARGS too.
pair() {
    tr=$1 port=$2 tool=$3 pattern=$4
    shift 4
    ND_TRANSPORT=$tr "$tools/$tool" -s "127.0.0.1:$port" ${SERVER_ARGS:-} 2>/dev/null &
    out=$(ND_TRANSPORT=$tr "$tools/$tool" -c "127.0.0.1:$port" "$@" --json) || fail "$tool $* ($tr) failed"
    wait
    echo "$out" | grep -Eq "$pattern" || fail "$tool $* ($tr) output: $out"
}
num='[0-9.]+'
bw="\"latency_us\":$num,\"cpu_percent\":$num,\"bytes_per_sec\":[0-9]+,\"mode\":\"polling\"\\}\$"
pair auto $((base + 3)) nd_rping "^\\{\"op\":\"write\",\"size\":65536,\"iterations\":200,\"depth\":16,$bw" -w -S 65536 -i 200
pair auto $((base + 4)) nd_rping "^\\{\"op\":\"read\",\"size\":65536,\"iterations\":200,\"depth\":16,$bw" -r -S 65536 -i 200
# nd_ping and nd_rpingpong over both transports: the credits must keep every Send covered by
# a receive; the Writes must land while the target only watches its memory (and polls).
n=5
for tr in shm iwarp; do
    pair $tr $((base + n)) nd_ping "^\\{\"op\":\"send\",\"size\":4096,\"iterations\":2000,\"depth\":16,$bw" -S 4096 -i 2000
    pair $tr $((base + n + 1)) nd_rpingpong \
        "^\\{\"op\":\"write\",\"size\":64,\"iterations\":2000,\"latency_us\":$num,\"cpu_percent\":$num\\}\$" -S 64 -i 2000
    n=$((n + 2))
done

# -a: buffers from nd_alloc_memory on both sides (Writes and Sends then go by memcpy over shm).
SERVER_ARGS=-a pair shm $((base + n)) nd_rping "^\\{\"op\":\"write\",\"size\":1048576,\"iterations\":50,\"depth\":16,$bw" \
    -w -S 1048576 -i 50 -a
SERVER_ARGS=-a pair shm $((base + n + 1)) nd_ping "^\\{\"op\":\"send\",\"size\":65536,\"iterations\":200,\"depth\":16,$bw" \
    -S 65536 -i 200 -a

# rping's and ucmatose's exchanges between two of ours, over shm, iwarp and iwarp in plain
# mode (as towards siw: no fences, Accept at the Reply, first FPDUs held).
n=$((n + 2))
for mode in shm:1 iwarp:1 iwarp:0; do
    tr=${mode%:*} ext=${mode#*:}
    ND_IWARP_EXT=$ext ND_TRANSPORT=$tr "$tools/nd_rping_compat" -s "127.0.0.1:$((base + n))" >/dev/null 2>&1 &
    out=$(ND_IWARP_EXT=$ext ND_TRANSPORT=$tr "$tools/nd_rping_compat" -c "127.0.0.1:$((base + n))" -C 50 -S 65535 -V) ||
        fail "nd_rping_compat ($mode) failed: $out"
    wait $! || fail "nd_rping_compat server ($mode) failed"
    [ "$out" = "client: 50 pings of 65535 bytes, validated" ] || fail "nd_rping_compat ($mode) output: $out"
    ND_IWARP_EXT=$ext ND_TRANSPORT=$tr "$tools/nd_cmatose" -s "127.0.0.1:$((base + n + 1))" -S 1048576 >/dev/null 2>&1 &
    out=$(ND_IWARP_EXT=$ext ND_TRANSPORT=$tr "$tools/nd_cmatose" -c "127.0.0.1:$((base + n + 1))" -S 1048576) ||
        fail "nd_cmatose ($mode) failed: $out"
    wait $! || fail "nd_cmatose server ($mode) failed"
    [ "$out" = "client: 10 messages of 1048576 bytes each way" ] || fail "nd_cmatose ($mode) output: $out"
    n=$((n + 2))
done

out=$("$tools/nd_mrlat" -S 65536 -i 100 --json) || fail "nd_mrlat failed"
echo "$out" | grep -Eq '^\{"size":65536,"iterations":100,"register_us":[0-9.]+,"deregister_us":[0-9.]+\}$' ||
    fail "nd_mrlat output: $out"
echo "tools ok"
