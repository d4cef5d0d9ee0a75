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
export FI_TCP_IFACE=lo FI_NET_IFACE=lo UCX_NET_DEVICES=lo ND_TRANSPORT=iwarp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "n/a" }'; }
field() { sed "s/.*\"$1\":\([-0-9.e+]*\).*/\1/"; }
port=56000
next_port() { port=$((port + 1)); }

# A netdirect tool, server and client on this host; prints the client's JSON line.
nd_pair() {
    tool=$1
    shift
    next_port
    "$build/tools/$tool" -s "127.0.0.1:$port" 2>/dev/null &
    "$build/tools/$tool" -c "127.0.0.1:$port" "$@" --json
    wait
}

fi_tcp() {
    command -v fi_pingpong > /dev/null || return 0
    next_port
    fi_pingpong -p tcp -e msg -S 8 -I "$ITERS" -B "$port" > /dev/null 2>&1 &
    for t in 1 2 3 4 5 6 7 8 9 10; do
        out=$(fi_pingpong -p tcp -e msg -S 8 -I "$ITERS" -P "$port" 127.0.0.1 2>/dev/null) && break
        sleep 0.2
    done
    wait
    echo "$out" | awk '$1 == 8 { print $7 }'
}

ucx_tcp() {
    command -v ucx_perftest > /dev/null || return 0
    next_port
    UCX_TLS=tcp,self ucx_perftest -p "$port" -t tag_lat -s 8 -n "$ITERS" > /dev/null 2>&1 &
    for t in 1 2 3 4 5 6 7 8 9 10; do
        out=$(UCX_TLS=tcp,self ucx_perftest 127.0.0.1 -p "$port" -t tag_lat -s 8 -n "$ITERS" 2>/dev/null) && break
        sleep 0.2
    done
    wait
    echo "$out" | awk '/^Final:/ { print $3 }'
}

for r in $(seq "$RUNS"); do
    "$build/bench/raw_tcp" pingpong -S 8 -i "$ITERS" | field half_rtt_us >> "$tmp/raw_lat"
    nd_pair nd_pingpong -p -S 8 -i "$ITERS" | field latency_us >> "$tmp/nd_lat"
    fi_tcp >> "$tmp/fi_lat"
    ucx_tcp >> "$tmp/ucx_lat"
    "$build/bench/raw_tcp" stream -S 1048576 | field bytes_per_s >> "$tmp/raw_bw"
    nd_pair nd_rping -w -S 1048576 | field bytes_per_sec >> "$tmp/nd_write"
    nd_pair nd_ping -S 1048576 | field bytes_per_sec >> "$tmp/nd_send"
done
for f in raw_lat nd_lat fi_lat ucx_lat raw_bw nd_write nd_send; do
    eval "$f=\$(median < \"$tmp/$f\")"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
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
