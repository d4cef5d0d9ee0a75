#!/bin/sh
# SPDX-License-Identifier: MIT
# What a page first touched after a system call costs on this machine: raw TCP ping-pong over
# loopback (bench/raw_tcp), each side loading 40 dependent cache lines after every message
# in, on 40 pages or packed into 2; interleaved rounds, medians. Where system calls flush
# the TLB (page-table isolation without PCID: /sys/devices/system/cpu/vulnerabilities/meltdown
# says "Mitigation: PTI" and /proc/cpuinfo has no pcid flag) each page costs a TLB refill,
# and a library's path from the recv that brings a message to the send of the reply pays it
# once per page of code and data it touches (bench/turn_pages.sh counts those pages).
# Usage: bench/page_cost.sh [build-dir]
set -u
build=${1:-build}
RUNS=${RUNS:-5}
ITERS=${ITERS:-200000}
. "$(dirname "$0")/lib.sh"

for r in $(seq "$RUNS"); do
    "$build/bench/raw_tcp" pingpong -i "$ITERS" | field half_rtt_us >> "$tmp/none"
    "$build/bench/raw_tcp" pingpong -i "$ITERS" -P 40 | field half_rtt_us >> "$tmp/spread"
    "$build/bench/raw_tcp" pingpong -i "$ITERS" -P 40 -L | field half_rtt_us >> "$tmp/dense"
done
none=$(median < "$tmp/none") spread=$(median < "$tmp/spread") dense=$(median < "$tmp/dense")
echo "## A page touched after a system call ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS rounds)"
echo
echo "meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2> /dev/null || echo unknown);" \
     "pcid: $(grep -qw pcid /proc/cpuinfo && echo yes || echo no)"
echo
echo "| 8 B raw TCP ping-pong, after each message in | half round trip (us) |"
echo "|---|---|"
echo "| nothing | $none |"
echo "| 40 dependent lines in 2 pages | $dense |"
echo "| 40 dependent lines on 40 pages | $spread |"
echo
echo "One page more: $(echo "$spread $dense" | awk '{ printf "%.1f", ($1 - $2) * 1000 / 38 }') ns" \
     "(one chase per half round trip: (40 pages - 2 pages) / 38)"
