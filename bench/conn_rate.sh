#!/bin/sh
# SPDX-License-Identifier: MIT
# Connection set-up in one run: netdirect's nd_conn (each connection's full life: create
# QP, connect, 4 KiB each way, disconnect, destroy) over shm with 1 and 2 threads per side
# and over iwarp, against raw unix-socket loops (connect, 4 KiB each way, close; and with
# no data) and a raw TCP loop, at the same concurrency (1 and 2 at once). Medians of $RUNS
# rounds of $SECONDS_EACH s each; ratios are raw / netdirect at equal concurrency.
# With ND_SDK_BIN (the ND SDK's programs, scripts/nd-sdk-build.sh), the SDK's ndconn runs
# too, once over shm (its client connects for a fixed 60 s), in the same run.
# Usage: [ND_SDK_BIN=dir] bench/conn_rate.sh [build-dir]
set -u
build=${1:-build}
RUNS=${RUNS:-3}
SECONDS_EACH=${SECONDS_EACH:-2}
ITERS=0
PORT_BASE=30000
. "$(dirname "$0")/lib.sh"

# nd_conn <transport> <threads>: one timed client run against a server of as many threads.
nd_conn() {
    next_port
    ND_TRANSPORT=$1 "$build/tools/nd_conn" -s "127.0.0.1:$port" -t "$2" 2>/dev/null &
    server=$!
    ND_TRANSPORT=$1 "$build/tools/nd_conn" -c "127.0.0.1:$port" -t "$2" -d "$SECONDS_EACH" --json
    kill "$server"
    wait "$server" 2>/dev/null
}

for r in $(seq "$RUNS"); do
    nd_conn shm 1 >> "$tmp/shm1"
    nd_conn shm 2 >> "$tmp/shm2"
    nd_conn iwarp 1 >> "$tmp/iw1"
    "$build/bench/raw_conn_rate" unix "$SECONDS_EACH" --json >> "$tmp/unix"
    "$build/bench/raw_conn_rate" unix "$SECONDS_EACH" --json --data 4096 >> "$tmp/unix4k"
    "$build/bench/raw_conn_rate" unix "$SECONDS_EACH" --json --data 4096 --threads 2 >> "$tmp/unix4k2"
    "$build/bench/raw_conn_rate" tcp "$SECONDS_EACH" --json >> "$tmp/tcp"
done
# ndconn: the client starts first (it waits 5 s for its server, then connects for 60 s).
sdk_ndconn() {
    next_port
    ND_TRANSPORT=shm "$ND_SDK_BIN/ndconn" -c "127.0.0.1:$port" > "$tmp/ndconn.c" 2>&1 &
    client=$!
    ND_TRANSPORT=shm "$ND_SDK_BIN/ndconn" -s "127.0.0.1:$port" > "$tmp/ndconn.s" 2>&1
    wait "$client"
    awk '/connections per second/ { print $1; exit }' "$tmp/ndconn.c"
}
if [ -n "${ND_SDK_BIN:-}" ]; then
    ndconn=$(sdk_ndconn)
    ndconn_times=$(grep -E '^(Connect|CompleteConnect|Disconnect):' "$tmp/ndconn.c" | tr -s ' ' | tr '\n' ' ')
fi
for f in shm1 shm2 iw1 unix unix4k unix4k2 tcp; do
    eval "$f=\$(field per_second < \"$tmp/$f\" | median)"
done
echo "## Connection set-up ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS runs of ${SECONDS_EACH} s)"
echo
echo "| | at once | connections/s | raw unix 4 KiB / this, same concurrency |"
echo "|---|---|---|---|"
echo "| raw unix connect/accept/close (no data) | 1 | $unix | |"
echo "| raw unix connect, 4 KiB each way, close | 1 | $unix4k | 1.00 |"
echo "| raw unix connect, 4 KiB each way, close | 2 | $unix4k2 | 1.00 |"
echo "| raw TCP connect/accept/close (no data) | 1 | $tcp | |"
echo "| **netdirect nd_conn, shm** (full life, 4 KiB each way) | 1 | **$shm1** | $(ratio "$unix4k" "$shm1") |"
echo "| **netdirect nd_conn, shm** | 2 | **$shm2** | $(ratio "$unix4k2" "$shm2") (raw at 1: $(ratio "$unix4k" "$shm2")) |"
echo "| **netdirect nd_conn, iwarp** | 1 | **$iw1** | $(ratio "$unix4k" "$iw1") |"
[ -n "${ND_SDK_BIN:-}" ] &&
    echo "| ND SDK ndconn on the SPI, shm (its own loop: a QP, Connect, CompleteConnect, one Send, Disconnect each; one 60 s run) | 1 | $ndconn | $(ratio "$unix4k" "$ndconn") |"
echo
[ -n "${ND_SDK_BIN:-}" ] && echo "ndconn client: $ndconn_times(us per connection)"
for f in shm1 shm2 iw1; do
    echo "$f averages: Connect $(field connect_us < "$tmp/$f" | median) us, CompleteConnect" \
         "$(field complete_connect_us < "$tmp/$f" | median) us, Disconnect $(field disconnect_us < "$tmp/$f" | median) us"
done
