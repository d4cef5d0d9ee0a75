#!/bin/sh
# SPDX-License-Identifier: MIT
# How many system calls the iwarp engine thread makes while a program spins on an idle
# QP's CQ and a peer streams 256 RDMA Writes of 1 MiB into a QP nobody polls (the spinner
# lends its empty polls to the engine's connection: tests/verbs/test_verbs_lend.c). Serving
# the stream itself the engine makes at least one call per FPDU, 8,000 and more; lent
# the work, a few per park tick. Median and range of $RUNS runs (needs perf events and
# tracefs: as root, mount -t tracefs nodev /sys/kernel/tracing).
# Usage: bench/lend_syscalls.sh [build-dir]   (RUNS=9 by default)
set -eu
build=${1:-build}
runs=${RUNS:-9}
t="$build/tests/verbs/test_verbs_lend"
[ -x "$t" ] || { echo "no $t: build first" >&2; exit 1; }
counts=""
for i in $(seq "$runs"); do
    n=$(ND_TRANSPORT=iwarp "$t" | awk '/^engine_syscalls/ { print $2 }')
    [ -n "$n" ] || { echo "no count (perf events not allowed?)" >&2; exit 1; }
    counts="$counts $n"
done
printf '%s\n' $counts | sort -n | awk '{ v[NR] = $1 } END {
    printf "engine thread system calls during 256 Writes of 1 MiB: median %d (min %d, max %d, %d runs)\n",
           v[int((NR + 1) / 2)], v[1], v[NR], NR }'
