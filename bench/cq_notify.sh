#!/bin/sh
# SPDX-License-Identifier: MIT
# Syscalls per CQ operation (bench/cq_notify.c), cross-checked with perf stat on the whole run.
# Usage: bench/cq_notify.sh [build-dir]
set -eu
build=${1:-build}
[ -e /sys/kernel/tracing/events/raw_syscalls ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
"$build/bench/cq_notify"
if command -v perf > /dev/null; then
    echo
    echo "perf stat over the whole run (setup included):"
    perf stat -e raw_syscalls:sys_enter "$build/bench/cq_notify" --json 2>&1 >/dev/null | grep sys_enter || true
fi
