#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's UD programs, unmodified, under netdirect-run: ibv_ud_pingpong (ibverbs-utils,
# 1000 exchanges of 1 KiB with the data checked) and udaddy (rdmacm-utils: rdma_cm's UDP
# port space, 10 messages each way), server and client as two processes on this host, or
# (netns) in two network namespaces. Both sides must exit 0.
# Usage: test_verbs_ud.sh NETDIRECT_RUN [local|netns]   (77 without the programs)
set -u
. "$(dirname "$0")/foreign_lib.sh"
nd_run=$1
command -v ibv_ud_pingpong > /dev/null && command -v udaddy > /dev/null ||
    { echo "ibverbs-utils or rdmacm-utils not installed"; exit 77; }
places "${2:-local}"
# Below the ephemeral range, apart from the other tests' ports.
port=$((2000 + $$ % 500 * 4))
# UD goes over UDP whatever ND_TRANSPORT says: one run per place.
transport=auto

# The GID index of the server's address, as the server's namespace numbers its GIDs.
gid=$(gid_index "$srv_addr")
[ -n "$gid" ] || { echo "no GID for $srv_addr"; $srv_in "$nd_run" ibv_devinfo -v; exit 1; }
run_pair "ibv_ud_pingpong" 0 "1000 iters" "1000 iters" -- ibv_ud_pingpong -p PORT -g "$gid" -s 1024 -n 1000 -c -- \
    ibv_ud_pingpong -p PORT -g "$gid" -s 1024 -n 1000 -c ADDR
echo "ibv_ud_pingpong ${2:-local} 1 KiB x1000 -c: $(grep usec/iter "$tmp/c")"
# udaddy takes no port: rdma_cm's UDP port 7174.
port=7174 wait_proto=u
run_pair "udaddy" 0 "test complete" "test complete" -- udaddy -b ADDR -C 10 -- udaddy -s ADDR -C 10
echo "udaddy ${2:-local}: ok"
