#!/bin/sh
# SPDX-License-Identifier: MIT
# Cross-host transport on loopback, every figure measured in this one run, medians of
# $RUNS rounds (the tools alternate within each round, so drift hits all of them alike):
#   8 B ping-pong, polling: raw TCP busy-poll (bench/raw_tcp), netdirect iwarp,
#   libfabric fi_pingpong -p tcp, ucx_perftest tag_lat over tcp;
#   1 MiB streaming: raw TCP, netdirect iwarp RDMA Write (nd_rping) and Send (nd_ping).
# Usage: bench/iwarp_compare.sh [build-dir]   (anchors missing from the machine are skipped)
set -u
build=${1:-build}
RUNS=${RUNS:-5}
ITERS=${ITERS:-50000}
export ND_TRANSPORT=iwarp
PORT_BASE=29000
. "$(dirname "$0")/lib.sh"

for r in $(seq "$RUNS"); do
    "$build/bench/raw_tcp" pingpong -S 8 -i "$ITERS" | field half_rtt_us >> "$tmp/raw_lat"
    nd_pair nd_pingpong -p -S 8 -i "$ITERS" | field latency_us >> "$tmp/nd_lat"
    fi_run -p tcp -e msg >> "$tmp/fi_lat"
    ucx_run tcp,self >> "$tmp/ucx_lat"
    "$build/bench/raw_tcp" stream -S 1048576 | field bytes_per_s >> "$tmp/raw_bw"
    nd_pair nd_rping -w -S 1048576 | field bytes_per_sec >> "$tmp/nd_write"
    nd_pair nd_ping -S 1048576 | field bytes_per_sec >> "$tmp/nd_send"
done
for f in raw_lat nd_lat fi_lat ucx_lat raw_bw nd_write nd_send; do
    eval "$f=\$(median < \"$tmp/$f\")"
done
gbps() { awk -v a="$1" 'BEGIN { if (a == "n/a") print "n/a"; else printf "%.2f", a / 1e9 }'; }

echo "## iwarp over loopback ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS rounds)"
echo
echo "| 8 B ping-pong, polling | half round trip (us) | netdirect / this |"
echo "|---|---|---|"
echo "| raw TCP, busy-poll (bench/raw_tcp) | $raw_lat | $(ratio "$nd_lat" "$raw_lat") |"
echo "| netdirect iwarp (nd_pingpong -p) | $nd_lat | 1.00 |"
echo "| libfabric fi_pingpong -p tcp | $fi_lat | $(ratio "$nd_lat" "$fi_lat") |"
echo "| ucx_perftest tag_lat, UCX_TLS=tcp | $ucx_lat | $(ratio "$nd_lat" "$ucx_lat") |"
echo
echo "| 1 MiB streaming | GB/s | this / raw TCP |"
echo "|---|---|---|"
echo "| raw TCP stream (bench/raw_tcp) | $(gbps "$raw_bw") | 1.00 |"
echo "| netdirect iwarp RDMA Write (nd_rping -w) | $(gbps "$nd_write") | $(ratio "$nd_write" "$raw_bw") |"
echo "| netdirect iwarp Send (nd_ping) | $(gbps "$nd_send") | $(ratio "$nd_send" "$raw_bw") |"
