#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job: install build dependencies, build, and show what netdirect does today on
# this host. The two-process connection-rate and latency demo (nd_conn, nd_pingpong)
# joins here as the transports land; until then this runs the adapter report, the
# cost of CQ operations in system calls, and a two-process CQ: one process completes,
# the other sleeps on its completion port.
set -eu
cd "$(dirname "$0")"
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" > build.log 2>&1 || { cat build.log; exit 1; }
echo "== nd_info"
./build/tools/nd_info
echo
echo "== system calls per CQ operation (bench/cq_notify)"
bench/cq_notify.sh build || echo "(needs root and tracefs for the syscall counter)"
echo
echo "== two processes, one CQ: 100,000 completions written by a child, parent asleep on its port"
./build/tests/test_cq_xproc 2> /dev/null
