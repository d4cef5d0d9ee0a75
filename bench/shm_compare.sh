#!/bin/sh
# SPDX-License-Identifier: MIT
# Same-host comparison, every figure measured in this one run, medians of $RUNS runs:
#   8 B ping-pong, polling: raw shared-memory spin (the floor), netdirect shm,
#   libfabric fi_pingpong -p shm, ucx_perftest tag_lat over posix shm;
#   system calls per netdirect round trip (perf counter);
#   RDMA Write 1 MiB bandwidth against memcpy of the same size.
# Usage: bench/shm_compare.sh [build-dir]   (anchors missing from the machine are skipped)
set -u
build=${1:-build}
RUNS=${RUNS:-5}
ITERS=${ITERS:-200000}
export FI_TCP_IFACE=lo FI_NET_IFACE=lo UCX_NET_DEVICES=lo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "n/a" }'; }
port=55000
next_port() { port=$((port + 1)); }

raw() { "$build/bench/raw_shm_pingpong" -S 8 -i "$ITERS" --json | sed 's/.*"latency_us":\([0-9.]*\).*/\1/'; }

nd() {
    next_port
    "$build/tools/nd_pingpong" -s "127.0.0.1:$port" 2>/dev/null &
    "$build/tools/nd_pingpong" -c "127.0.0.1:$port" -S 8 -i "$ITERS" --json | sed 's/.*"latency_us":\([0-9.]*\).*/\1/'
    wait
}

fi_shm() {
    command -v fi_pingpong > /dev/null || return 0
    next_port
    fi_pingpong -p shm -e rdm -S 8 -I "$ITERS" -B "$port" > /dev/null 2>&1 &
    # The server needs a moment to open its control socket; the client retries on refusal.
    for t in 1 2 3 4 5 6 7 8 9 10; do
        out=$(fi_pingpong -p shm -e rdm -S 8 -I "$ITERS" -P "$port" 127.0.0.1 2>/dev/null) && break
        sleep 0.2
    done
    wait
    echo "$out" | awk '$1 == 8 { print $7 }'
}

ucx_shm() {
    command -v ucx_perftest > /dev/null || return 0
    next_port
    UCX_TLS=posix,self ucx_perftest -p "$port" -t tag_lat -s 8 -n "$ITERS" > /dev/null 2>&1 &
    for t in 1 2 3 4 5 6 7 8 9 10; do
        out=$(UCX_TLS=posix,self ucx_perftest 127.0.0.1 -p "$port" -t tag_lat -s 8 -n "$ITERS" 2>/dev/null) && break
        sleep 0.2
    done
    wait
    echo "$out" | awk '/^Final:/ { print $3 }'
}

syscalls_per_rt() {
    # nd_pingpong counts its own system calls around the measured loop (perf tracepoint).
    [ -e /sys/kernel/tracing/events/raw_syscalls ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
    next_port
    "$build/tools/nd_pingpong" -s "127.0.0.1:$port" 2>/dev/null &
    "$build/tools/nd_pingpong" -c "127.0.0.1:$port" -S 8 -i "$ITERS" --json |
        sed 's/.*"syscalls_per_roundtrip":\([-0-9.]*\).*/\1/'
    wait
}

for r in $(seq "$RUNS"); do
    raw >> "$tmp/raw"
    nd >> "$tmp/nd"
    fi_shm >> "$tmp/fi"
    ucx_shm >> "$tmp/ucx"
    "$build/bench/shm_write_bw" --json >> "$tmp/bw"
done
RAW=$(median < "$tmp/raw"); ND=$(median < "$tmp/nd"); FI=$(median < "$tmp/fi"); UCX=$(median < "$tmp/ucx")
SYS=$(syscalls_per_rt)
BW=$(sed 's/.*"write_gbps":\([0-9.]*\).*/\1/' "$tmp/bw" | median)
MC=$(sed 's/.*"memcpy_gbps":\([0-9.]*\).*/\1/' "$tmp/bw" | median)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

echo "## Same-host comparison ($(date -u +%Y-%m-%d), $(nproc) CPUs, medians of $RUNS runs)"
echo
echo "| 8 B ping-pong, polling | half round trip (us) | netdirect / this |"
echo "|---|---|---|"
echo "| raw shared-memory spin (floor) | $RAW | $(ratio "$ND" "$RAW") |"
echo "| **netdirect shm** | **$ND** | 1.00 |"
echo "| libfabric fi_pingpong -p shm | $FI | $(ratio "$ND" "$FI") |"
echo "| ucx_perftest tag_lat, posix | $UCX | $(ratio "$ND" "$UCX") |"
echo
echo "System calls per netdirect 8 B round trip (client side, perf): $SYS"
echo
echo "RDMA Write 1 MiB: $BW GB/s; memcpy 1 MiB: $MC GB/s; ratio $(ratio "$BW" "$MC")"
