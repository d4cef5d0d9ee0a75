#!/bin/sh
# SPDX-License-Identifier: MIT
# Connection set-up in one run, one connection at a time: netdirect (nd_conn over shm:
# create QP, connect, 4 KiB each way, disconnect, destroy) against raw unix-socket and raw
# TCP connect/accept/close loops. Medians of $RUNS runs of $SECONDS s each, and ratios.
# Usage: bench/conn_rate.sh [build-dir]
set -u
build=${1:-build}
RUNS=${RUNS:-3}
SECONDS_EACH=${SECONDS_EACH:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
port=56000
for r in $(seq "$RUNS"); do
    port=$((port + 1))
    "$build/tools/nd_conn" -s "127.0.0.1:$port" 2>/dev/null &
    server=$!
    "$build/tools/nd_conn" -c "127.0.0.1:$port" -d "$SECONDS_EACH" --json >> "$tmp/nd"
    kill "$server"; wait "$server" 2>/dev/null
    "$build/bench/raw_conn_rate" unix "$SECONDS_EACH" --json >> "$tmp/unix"
    "$build/bench/raw_conn_rate" tcp "$SECONDS_EACH" --json >> "$tmp/tcp"
done
ND=$(sed 's/.*"per_second":\([0-9.]*\).*/\1/' "$tmp/nd" | median)
CONNECT=$(sed 's/.*"connect_us":\([0-9.]*\).*/\1/' "$tmp/nd" | median)
COMPLETE=$(sed 's/.*"complete_connect_us":\([0-9.]*\).*/\1/' "$tmp/nd" | median)
DISC=$(sed 's/.*"disconnect_us":\([0-9.]*\).*/\1/' "$tmp/nd" | median)
UNIX=$(sed 's/.*"per_second":\([0-9.]*\).*/\1/' "$tmp/unix" | median)
TCP=$(sed 's/.*"per_second":\([0-9.]*\).*/\1/' "$tmp/tcp" | median)
echo "## Connection set-up ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS runs of ${SECONDS_EACH} s)"
echo
echo "| one connection at a time | connections/s | netdirect / this |"
echo "|---|---|---|"
echo "| **netdirect nd_conn (shm, full life)** | **$ND** | 1.00 |"
awk -v n="$ND" -v u="$UNIX" -v t="$TCP" 'BEGIN {
    printf "| raw unix connect/accept/close | %s | %.2f |\n", u, n / u
    printf "| raw TCP connect/accept/close | %s | %.2f |\n", t, n / t }'
echo
echo "netdirect averages: Connect $CONNECT us, CompleteConnect $COMPLETE us, Disconnect $DISC us"
