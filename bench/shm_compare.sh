#!/bin/sh
# SPDX-License-Identifier: MIT
# Same-host comparison, every figure measured in this one run, medians of $RUNS runs:
#   8 B ping-pong, polling: raw shared-memory spin (the floor), netdirect shm,
#   libfabric fi_pingpong -p shm, ucx_perftest tag_lat over posix shm;
#   system calls per netdirect round trip (perf counter);
#   RDMA Write 1 MiB bandwidth against memcpy of the same size, into ordinary memory (one
#   cross-memory call per Write), the same on transparent huge pages, and into
#   nd_alloc_memory memory (mapped by the peer).
# Usage: bench/shm_compare.sh [build-dir]   (anchors missing from the machine are skipped)
set -u
build=${1:-build}
RUNS=${RUNS:-5}
ITERS=${ITERS:-200000}
PORT_BASE=28000
. "$(dirname "$0")/lib.sh"

raw() { raw_spin 8 "$ITERS"; }
nd() { nd_pair nd_pingpong -S 8 -i "$ITERS" | field latency_us; }

syscalls_per_rt() {
    # nd_pingpong counts its own system calls in its warm-up (perf tracepoint).
    [ -e /sys/kernel/tracing/events/raw_syscalls ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
    nd_pair nd_pingpong -S 8 -i "$ITERS" | field syscalls_per_roundtrip
}

for r in $(seq "$RUNS"); do
    raw >> "$tmp/raw"
    nd >> "$tmp/nd"
    fi_run -p shm -e rdm >> "$tmp/fi"
    ucx_run posix,self >> "$tmp/ucx"
    "$build/bench/shm_write_bw" --json >> "$tmp/bw"
    "$build/bench/shm_write_bw" -H --json >> "$tmp/bwh"
    "$build/bench/shm_write_bw" -a --json >> "$tmp/bwa"
    ND_MR_HUGE_PAGES=0 "$build/bench/shm_write_bw" -R 67108864 --json >> "$tmp/bwr0"
    "$build/bench/shm_write_bw" -R 67108864 --json >> "$tmp/bwr1"
    ND_MR_HUGE_PAGES=0 "$build/bench/shm_write_bw" -r -R 67108864 --json >> "$tmp/rdr0"
    "$build/bench/shm_write_bw" -r -R 67108864 --json >> "$tmp/rdr1"
done
RAW=$(median < "$tmp/raw"); ND=$(median < "$tmp/nd"); FI=$(median < "$tmp/fi"); UCX=$(median < "$tmp/ucx")
SYS=$(syscalls_per_rt)
# med <json key> <file>: the median of that field over the runs' lines.
med() { field "$1" < "$tmp/$2" | median; }
BW=$(med write_gbps bw)
MC=$(med memcpy_gbps bw)
BWH=$(med write_gbps bwh)
MCH=$(med memcpy_gbps bwh)
BWA=$(med write_gbps bwa)
MCA=$(med memcpy_gbps bwa)
BWR0=$(med write_gbps bwr0)
MCR0=$(med memcpy_gbps bwr0)
BWR1=$(med write_gbps bwr1)
MCR1=$(med memcpy_gbps bwr1)
RDR0=$(med read_gbps rdr0)
RDR1=$(med read_gbps rdr1)

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
echo "RDMA Write 1 MiB into ordinary memory: $BW GB/s; memcpy 1 MiB: $MC GB/s; ratio $(ratio "$BW" "$MC")"
echo "RDMA Write 1 MiB into ordinary memory on huge pages: $BWH GB/s; memcpy 1 MiB: $MCH GB/s; ratio $(ratio "$BWH" "$MCH")"
echo "RDMA Write 1 MiB into nd_alloc_memory memory: $BWA GB/s; memcpy 1 MiB: $MCA GB/s; ratio $(ratio "$BWA" "$MCA")"
echo "RDMA Write 1 MiB walking a 64 MiB region of ordinary memory, 4 KiB pages (ND_MR_HUGE_PAGES=0):" \
     "$BWR0 GB/s; memcpy: $MCR0 GB/s; ratio $(ratio "$BWR0" "$MCR0")"
echo "The same, the region's blocks made huge pages by registration (default): $BWR1 GB/s; memcpy: $MCR1 GB/s;" \
     "ratio $(ratio "$BWR1" "$MCR1"); against 4 KiB pages $(ratio "$BWR1" "$BWR0")"
echo "RDMA Read 1 MiB walking a 64 MiB region of ordinary memory: 4 KiB pages $RDR0 GB/s, huge pages" \
     "$RDR1 GB/s ($(ratio "$RDR1" "$RDR0"))"
